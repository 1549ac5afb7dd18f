"""One registry type for everything found by name: stores (by URI scheme), embedders, engines.

Entries are registered as ``"module:attribute"`` strings so that listing or looking up a name
imports nothing heavy; the object is imported on first use. An entry names the extra that
provides its dependencies, so a missing package becomes a :class:`NotInstalledError` with the
``pip install`` command.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from recallwatch._redact import redact
from recallwatch.errors import NotInstalledError, UsageError

T = TypeVar("T")

__all__ = ["Entry", "Registry", "listed", "nearest", "suggest"]


# Characters a person easily types or reads one for another: O and 0, l, I and 1, S and 5…
_LOOKALIKE = str.maketrans("OoQDIilL|SsZzBbGg", "00001111155228866")


def _looks(text: str) -> str:
    return text.translate(_LOOKALIKE).lower()


def nearest(name: str, valid: list[str]) -> str | None:
    """The valid name ``name`` was most likely meant to be, or None. The rule, in order: a name
    that differs from it only by look-alike characters (O/0, I/l/1, S/5, Z/2, B/8, G/6) or
    case; else the most similar by difflib's ratio (at least 0.6); a tie goes to the name that
    differs by more look-alike characters, then to the first in alphabetical order."""
    looks = _looks(name)
    same_look = sorted(v for v in valid if _looks(v) == looks)
    if same_look:
        return same_look[0]
    scored = [(difflib.SequenceMatcher(None, name, v).ratio(), v) for v in valid]
    best = max((score for score, _ in scored), default=0.0)
    if best < 0.6:
        return None
    tied = [v for score, v in scored if score == best]
    return min(tied, key=lambda v: (-difflib.SequenceMatcher(None, looks, _looks(v)).ratio(), v))


def suggest(name: str, valid: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest valid name (:func:`nearest`), or an empty
    string."""
    close = nearest(name, valid)
    return f" (did you mean {close!r}?)" if close else ""


def listed(items: Sequence[str], limit: int, sep: str = ", ") -> str:
    """The first ``limit`` of ``items`` joined by ``sep``, and how many more there are: a
    message names a few and counts the rest (``a, b, c and 18 more``)."""
    shown = sep.join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # "package.module:attribute"
    extra: str | None = None  # pip extra that provides the dependencies
    description: str = ""


class Registry(Generic[T]):
    """Names to lazily imported objects. Rejects duplicates; unknown names list the valid ones."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._loaded: dict[str, T] = {}

    def register(
        self, name: str, target: str | T, *, extra: str | None = None, description: str = ""
    ) -> None:
        if name in self._entries:
            raise UsageError(f"{self.kind} {name!r} is already registered")
        if isinstance(target, str):
            self._entries[name] = Entry(name, target, extra, description)
        else:
            self._entries[name] = Entry(name, f"<object {name}>", extra, description)
            self._loaded[name] = target

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> Iterator[Entry]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def get(self, name: str) -> T:
        if name not in self._entries:
            valid = self.names()
            raise UsageError(  # the name may be a mistyped URL holding a password
                f"unknown {self.kind} {redact(name)!r}{suggest(name, valid)}; "
                f"valid: {', '.join(valid)}"
            )
        if name not in self._loaded:
            entry = self._entries[name]
            module_name, _, attr = entry.target.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                if entry.extra is None:
                    raise
                raise NotInstalledError(f"{self.kind} {name!r} ({exc.name})", entry.extra) from exc
            obj: object = module
            for part in attr.split("."):  # "Class.factory" names a classmethod
                obj = getattr(obj, part)
            self._loaded[name] = obj  # type: ignore[assignment]
        return self._loaded[name]
