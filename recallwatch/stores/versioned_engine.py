"""The engine side of :class:`~recallwatch.stores.versioned.VersionedStore`: what each adapter
without native versions implements (the engine primitives ``_create_table``, ``_write``,
``_query``…, with the defaults an engine may override), and the version pointers built on them.

The pointers (which versions exist, which is current, which is production, which are sealed) are
one metadata value, ``__recallwatch_versions__``, changed only under the store's metadata lock
(:meth:`VersionedEngine._meta_lock`). A version ``N`` is the physical table ``<name>__v<N>``; a
write to a sealed version first copies it to a new number and continues there
(:meth:`VersionedEngine._writable`). The public methods are in ``versioned.py``.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np

from recallwatch.errors import StoreError
from recallwatch.stores.checks import NormFilter, chunk_matches
from recallwatch.stores.rows import Row
from recallwatch.vectors import cosine_scores, top_k

__all__ = ["VersionedEngine", "store_names"]

_STATE_KEY = "__recallwatch_versions__"
_PHYSICAL_RE = re.compile(r"^(.+)__(?:v\d+|meta)$")


def store_names(names: Iterable[str]) -> list[str]:
    """The store names behind an engine's physical tables: ``kb__v3`` and ``kb__meta`` are the
    versions and pointers of store ``kb`` (see the module docstring)."""
    return sorted({m.group(1) for n in names if (m := _PHYSICAL_RE.match(n))})


# One lock per store named in this process, for engines that offer no lock of their own.
_PROCESS_LOCKS: dict[str, threading.RLock] = {}


def _process_lock(key: str) -> threading.RLock:
    return _PROCESS_LOCKS.setdefault(key, threading.RLock())  # setdefault is atomic


os.register_at_fork(after_in_child=_PROCESS_LOCKS.clear)


class VersionedEngine(ABC):
    """The engine primitives and version pointers of a VersionedStore (module docstring)."""

    scheme: ClassVar[str]
    #: False when ``exact=True`` is computed client-side from exported vectors (Chroma, index
    #: files): still exact, but it reads every vector of the version into memory.
    native_exact: ClassVar[bool] = True
    #: The engine client's exception types, reported as StoreError by every public method.
    _engine_errors: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init__(self, uri: str, name: str) -> None:
        self._uri = uri  # already redacted by the adapter
        self.name = name
        self._pinned: int | None = None  # set on read-only views returned by checkout()
        self._state: dict[str, Any] = self._meta_get(_STATE_KEY) or {
            "current": 1, "production": None, "sealed": [], "created": {}, "dim": None,
        }

    # ---- engine primitives -------------------------------------------------------------------
    @abstractmethod
    def _create_table(self, table: str, dim: int) -> None: ...

    @abstractmethod
    def _drop_table(self, table: str) -> None: ...

    @abstractmethod
    def _write(self, table: str, rows: list[Row], vectors: np.ndarray) -> None:
        """Insert or replace rows by id."""

    @abstractmethod
    def _remove(self, table: str, ids: Sequence[str]) -> None: ...

    @abstractmethod
    def _query(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None, exact: bool
    ) -> list[tuple[list[str], list[float]]]:
        """Per query row: ids and cosine similarities, best first."""

    @abstractmethod
    def _fetch(self, table: str, ids: Sequence[str]) -> tuple[list[Row], np.ndarray]:
        """Rows and vectors of the ids present (any order)."""

    @abstractmethod
    def _scan(self, table: str, doc_ids: Sequence[str] | None) -> tuple[list[Row], np.ndarray]:
        """All rows (of these documents) with their vectors."""

    @abstractmethod
    def _count(self, table: str) -> int: ...

    @abstractmethod
    def _meta_get(self, key: str) -> Any: ...

    @abstractmethod
    def _meta_set(self, key: str, value: Any) -> None: ...

    def _copy_table(self, src: str, dst: str, dim: int) -> None:
        """Copy a version; engines with a server-side copy override this."""
        self._create_table(dst, dim)
        rows, vectors = self._scan(src, None)
        for start in range(0, len(rows), 1000):
            self._write(dst, rows[start:start + 1000], vectors[start:start + 1000])

    def _narrow_scan(self, table: str, columns: Sequence[str]) -> list[Row]:
        """Only these columns of every row; engines that can skip the vectors override this."""
        return self._scan(table, None)[0]

    def _switch_production(self, table: str) -> None:  # noqa: B027  (a hook, often empty)
        """Point the engine's alias ``<name>`` at ``table`` atomically (no-op without aliases)."""

    def _atomic(self) -> contextlib.AbstractContextManager[None]:
        """A transaction around the alias switch and the pointer write, where the engine has one."""
        return contextlib.nullcontext()

    def _meta_lock(self) -> contextlib.AbstractContextManager[Any]:
        """The lock every metadata read-modify-write holds (pointers and ``update_meta``). Here a
        lock shared by the store objects of this process that name this store; an engine with a
        lock of its own overrides it (a file lock on local disk, a transaction in PostgreSQL).
        It must be re-entrant: a pointer change holds it around ``_meta_set``."""
        return _process_lock(f"{type(self).__name__} {self._uri} {self.name}")

    def _build_index_now(self) -> None:  # noqa: B027  (a hook; most engines need none)
        """Build the ANN index of the current version now, if the engine defers it (pgvector)."""

    def _close(self) -> None:  # noqa: B027  (a hook; most engines need none)
        """Release the engine client."""

    def _exact_by_export(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None
    ) -> list[tuple[list[str], list[float]]]:
        """Brute force over the exported vectors, for engines with no exact search."""
        rows, stored = self._scan(table, None)
        keep = [i for i, row in enumerate(rows) if chunk_matches(row, filter)]
        ids = [str(rows[i]["id"]) for i in keep]
        if not keep:
            return [([], []) for _ in range(len(vectors))]
        scores = cosine_scores(vectors, stored[keep])
        out = []
        for row in scores:
            found, best = top_k(ids, row, k)
            out.append((found, best.tolist()))
        return out

    # ---- version pointers -----------------------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._uri

    def _table(self, version: int | None = None) -> str:
        return f"{self.name}__v{self._version() if version is None else version}"

    def _version(self) -> int:
        return self._pinned if self._pinned is not None else int(self._state["current"])

    def _reload_state(self) -> None:
        # Another process (a reindex, an ingest) may have moved the pointers since we opened.
        if self._pinned is None:
            self._state = self._meta_get(_STATE_KEY) or self._state

    def _update_state(self, change: Callable[[dict[str, Any]], None], *,
                      switch: str | None = None) -> None:
        """Change the stored pointers: under the metadata lock, the stored pointers are read,
        ``change`` edits a copy, the copy is saved and then published to this object with one
        assignment. The pointers are never edited in place: threads reading through this store
        replace ``self._state`` on every reload and deep-copy it in ``checkout``, so an in-place
        edit could be lost to a reload or tear a copy. With ``switch``, the engine's production
        switch to that table commits together with the pointers (one transaction where the
        engine has them)."""
        def edit(stored: dict[str, Any] | None) -> dict[str, Any]:
            state = copy.deepcopy(stored or self._state)
            change(state)
            return state

        self._state = self._locked_update(_STATE_KEY, edit, switch=switch)

    def _locked_update(self, key: str, change: Callable[[Any], Any], *,
                       switch: str | None = None) -> Any:
        """The one read-modify-write of a metadata value (the pointers, or a key of
        ``update_meta``): read, change, write, all under the metadata lock; with ``switch``, the
        engine's production switch to that table happens inside the same transaction."""
        with self._atomic(), self._meta_lock():
            new = change(self._meta_get(key))
            if switch is not None:
                self._switch_production(switch)
            self._meta_set(key, new)
        return new

    def _has_table(self) -> bool:
        return str(self._version()) in self._state["created"]

    def _writable(self, dim: int | None = None) -> str:
        if self._pinned is not None:
            raise StoreError(
                f"{self._uri}: version {self._pinned} was opened read-only with checkout(); "
                "write to the store itself"
            )
        self._reload_state()
        cur = int(self._state["current"])
        if cur in self._state["sealed"]:
            # a discarded number is not reused: history records may name it
            new = max(int(v) for v in [*self._state["created"],
                                       *self._state.get("discarded", [])]) + 1
            self._copy_table(self._table(cur), self._table(new), int(self._state["dim"]))

            def continue_in_copy(state: dict[str, Any]) -> None:
                state["created"][str(new)] = datetime.now(UTC).isoformat()
                state["current"] = new

            self._update_state(continue_in_copy)
        elif str(cur) not in self._state["created"]:
            if dim is None:
                return self._table(cur)
            self._create_table(self._table(cur), dim)

            def created(state: dict[str, Any]) -> None:
                state["created"][str(cur)] = datetime.now(UTC).isoformat()
                state["dim"] = dim

            self._update_state(created)
        return self._table()

    def _parse_version(self, version: str) -> int:
        self._reload_state()
        if str(version) not in self._state["created"]:
            known = ", ".join(sorted(self._state["created"], key=int)) or "none yet"
            raise StoreError(f"{self._uri}: no version {version!r}; versions: {known}")
        return int(version)
