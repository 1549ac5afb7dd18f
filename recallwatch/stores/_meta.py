"""A small JSON key-value file beside a store's data, for adapters without a metadata table.

Writes take an exclusive lock on a sibling ``.lock`` file and replace the file whole
(:func:`recallwatch._files.write_atomic`): a reader sees the old or the new content, never half of
it, and a writer killed mid-way leaves the old file intact.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from recallwatch._files import write_atomic
from recallwatch.errors import StoreError

__all__ = ["MetaFile"]


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
        with self._locked():
            data = self._load()
            new = fn(data.get(key))
            if new is None:
                data.pop(key, None)
            else:
                data[key] = new
            self._write(data)
        return new

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

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
