"""Engine failures and absent stores, as a user reads them: one line naming the store.

:func:`guarded` turns an engine client's own exception into a StoreError naming the store and the
call; :func:`missing_table` and :func:`missing_location` are the errors for a store that is not
there, with the ones that are and the closest name (opening a store to read never creates it).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Concatenate, ParamSpec, Protocol, TypeVar

from recallwatch._registry import suggest
from recallwatch.errors import RecallwatchError, StoreError

__all__ = ["engine_message", "guarded", "missing_location", "missing_table"]


def missing_table(uri: str, what: str, name: str, present: Sequence[str]) -> StoreError:
    """The error for a table (collection) that does not exist: the ones that do, and the closest.
    Opening a store to read it never creates it (only ``recallwatch ingest`` creates a store)."""
    shown = ", ".join(present[:20]) + (f" and {len(present) - 20} more" if len(present) > 20
                                       else "")
    listing = f"{what}s present: {shown}" if present else f"there is no {what} yet"
    return StoreError(f"{uri}: no {what} {name!r}{suggest(name, list(present))}; {listing}")


def missing_location(uri: str, engine: str, path: Path, is_store: Callable[[Path], bool]
                     ) -> StoreError:
    """The error for a store path that does not exist (or holds no store of this engine), with
    the closest sibling that does."""
    try:
        names = sorted(p.name for p in path.parent.iterdir() if p != path)
    except OSError:
        names = []
    # only the names close enough to suggest are looked into (a directory may hold thousands)
    close = difflib.get_close_matches(path.name, names, n=5, cutoff=0.6)
    stores = [name for name in close if is_store(path.parent / name)]
    return StoreError(f"{uri}: no {engine} store at {path}{suggest(path.name, stores)}")


class _Engine(Protocol):
    _engine_errors: ClassVar[tuple[type[BaseException], ...]]

    @property
    def uri(self) -> str: ...


_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S", bound=_Engine)


def guarded(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Turn the engine client's own exceptions into a StoreError naming the store and the call,
    so a lost connection or a refused request reaches the user as one clean line."""
    @functools.wraps(method)
    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except RecallwatchError:
            raise
        except self._engine_errors as exc:
            raise StoreError(f"{self.uri}: {method.__name__} failed: {engine_message(exc)}"
                             ) from exc
    return wrapper


_RUST_SOURCE = re.compile(r",? \S+\.rs:\d+:\d+")


def engine_message(exc: BaseException) -> str:
    """An engine's exception as one line for a user: whitespace folded, and without the Rust
    source locations that LanceDB appends (``…/lance-io/src/local.rs:273:40``)."""
    return " ".join(_RUST_SOURCE.sub("", str(exc)).split()) or type(exc).__name__
