"""Store metadata beside a store's data, and the file lock every metadata update holds.

:class:`MetaFile` is a small JSON key-value file, for adapters without a metadata table (LanceDB,
index files). Every change is a read-modify-write under :func:`file_lock` on a sibling ``.lock``
file, and replaces the file whole (:func:`recallwatch._files.write_atomic`): a reader sees the old
or the new content, never half of it, a writer killed mid-way leaves the old file intact, and two
updaters (threads or processes) never lose each other's keys.

:func:`file_lock` is also the lock of the adapters whose metadata lives in the engine but whose
data lies on local disk (Chroma, Qdrant local mode, Milvus Lite).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any

from recallwatch._files import write_atomic
from recallwatch.errors import StoreError

__all__ = ["MetaFile", "file_lock"]


class _Held:
    """This process's hold on one lock file: a re-entrant thread lock, and the open file that
    carries the flock while any holder in this process is inside."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.handle: IO[str] | None = None


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child holds none of its parent's locks (a thread of the parent may have held one).
    global _HELD_GUARD
    _HELD.clear()
    _HELD_GUARD = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its directory, if missing): against
    other processes through ``flock``, against other threads of this process through a thread
    lock. Re-entrant within a thread, whichever object asks: a second ``flock`` on another
    descriptor of the same file would wait for the first forever."""
    key = str(path.absolute())
    with _HELD_GUARD:
        held = _HELD.setdefault(key, _Held())
    with held.lock:
        if held.depth == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(path, "a")  # noqa: SIM115 - held across the yield, closed below
            try:
                fcntl.flock(handle, fcntl.LOCK_EX)
            except BaseException:
                handle.close()
                raise
            held.handle = handle
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0 and held.handle is not None:
                fcntl.flock(held.handle, fcntl.LOCK_UN)
                held.handle.close()
                held.handle = None


class MetaFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, key: str) -> Any:
        return self._load().get(key)

    def set(self, key: str, value: Any) -> None:
        """Set ``key`` (``None`` removes it). ``value`` must be JSON-serialisable."""
        self.update(key, lambda _old: value)

    def update(self, key: str, fn: Callable[[Any], Any]) -> Any:
        """Read-modify-write one key under the lock; returns the new value."""
        with self.locked():
            data = self._load()
            new = fn(data.get(key))
            if new is None:
                data.pop(key, None)
            else:
                data[key] = new
            self._write(data)
        return new

    def locked(self) -> AbstractContextManager[None]:
        """The lock every change of this file holds (re-entrant: hold it around several)."""
        return file_lock(self.path.with_suffix(".lock"))

    def _load(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StoreError(f"store metadata {self.path} is not valid JSON ({exc.msg}); "
                             "it was edited by hand or by another tool") from None
        if not isinstance(data, dict):
            raise StoreError(f"store metadata {self.path} is not a JSON object")
        return data

    def _write(self, data: dict[str, Any]) -> None:
        try:
            text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"store metadata must be JSON-serialisable: {exc}") from None
        write_atomic(self.path, text)
