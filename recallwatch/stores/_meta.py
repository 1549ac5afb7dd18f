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

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from recallwatch._files import file_lock, write_atomic
from recallwatch.errors import StoreError

__all__ = ["MetaFile", "file_lock"]


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
