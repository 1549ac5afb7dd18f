"""One registry type for everything found by name: stores (by URI scheme), embedders, engines.

Entries are registered as ``"module:attribute"`` strings so that listing or looking up a name
imports nothing heavy; the object is imported on first use. An entry names the extra that
provides its dependencies, so a missing package becomes a :class:`NotInstalledError` with the
``pip install`` command.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from recallwatch._redact import redact
from recallwatch.errors import NotInstalledError, UsageError

T = TypeVar("T")

__all__ = ["Entry", "Registry", "suggest"]


def suggest(name: str, valid: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest valid name, or an empty string."""
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


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
