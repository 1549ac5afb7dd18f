"""Versions for the engines that have none: the base every adapter but LanceDB builds on.

A VectorStore whose versions are physical tables, with every protocol method and capability
written once here for six adapters, which implement only the engine primitives
(``_create_table``, ``_write``, ``_query``…).

* a version ``N`` is a physical table/collection ``<name>__v<N>``;
* reads and writes go to the *current* version; ``promote(N)`` points *production* at it and
  **seals** it: the next write first copies it to ``__v<N+1>`` and makes that current, so a
  version that was accepted and served is never modified in place;
* the switch of production is one atomic operation of the engine (a view replaced in a transaction
  for PostgreSQL, an alias for Qdrant and Milvus, one atomic file rename for index files), and the
  bare ``<name>`` is what an application queries to always read production;
* every row carries ``ingested_version``; ``ids_since(v)`` lists rows whose version is newer.
  Re-upserting a chunk with an unchanged ``content_hash`` keeps its version (idempotent ingest);
* the pointers (which versions exist, which is current, which is production) are one metadata
  value, changed only under the store's metadata lock (``VersionedEngine._meta_lock``), as
  every :meth:`~VersionedStore.update_meta` is.

The engine primitives and the pointers are in ``versioned_engine.py``; the reindex of these
engines (copy production, verify, switch) in ``versioned_index.py``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from recallwatch.errors import InputError, StoreError, UsageError
from recallwatch.stores.base import (
    Chunk,
    Filter,
    Hits,
    IndexVersion,
    StagedIndex,
    SupportsContentHashes,
    SupportsMetaUpdate,
    SupportsReindex,
    SupportsSeal,
    SupportsVectors,
)
from recallwatch.stores.checks import (
    NormFilter,
    check_k,
    check_unique_ids,
    check_vectors,
    clamp_k,
    normalise_filter,
)
from recallwatch.stores.failures import guarded
from recallwatch.stores.rows import chunk_from_row, row_from_chunk
from recallwatch.stores.versioned_engine import VersionedEngine, store_names
from recallwatch.stores.versioned_index import VersionedIndex, restore, stage_problem
from recallwatch.vectors import cosine_scores, top_k

__all__ = ["VersionedStore", "store_names"]

def _hits(ids: list[str], scores: Iterable[float]) -> Hits:
    # Engines return scores already ranked, but ANN engines may break ties differently; re-sort
    # by the package's one tie rule so the "non-increasing" promise of Hits holds everywhere.
    found = np.asarray(list(scores), dtype=np.float32)
    return Hits(*top_k(ids, found, len(ids)))


class VersionedStore(VersionedEngine, SupportsVectors, SupportsContentHashes, SupportsSeal,
                     SupportsMetaUpdate, SupportsReindex):
    """A VectorStore over an engine without native versions (see the module docstring); the
    engine primitives an adapter implements, and the version pointers, are those of
    :class:`~recallwatch.stores.versioned_engine.VersionedEngine`."""
    # ---- VectorStore -------------------------------------------------------------------------
    def _check_vectors(self, vectors: np.ndarray, rows: int | None, what: str) -> np.ndarray:
        return check_vectors(vectors, rows, what, self._state["dim"])

    @guarded
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        arr = self._check_vectors(vectors, len(chunks), "vectors")
        if not chunks:
            return
        check_unique_ids(chunks)
        # Read what is stored first: a chunk whose fields and vector direction are unchanged is
        # not rewritten (re-running an ingestion writes nothing, creates no version, and leaves
        # ANN indexes alone), and a changed vector with the same content hash keeps the version
        # it was first ingested in, so ids_since() lists only what really changed.
        self._reload_state()
        old_rows, old_vectors = (self._fetch(self._table(), [c.id for c in chunks])
                                 if self._has_table() and self._pinned is None else ([], None))
        old = {str(r["id"]): (r, old_vectors[n]) for n, r in enumerate(old_rows)
               if old_vectors is not None}
        keep = []
        for n, chunk in enumerate(chunks):
            stored = old.get(chunk.id)
            if stored is None or chunk_from_row(stored[0]) != chunk or not np.allclose(
                    cosine_scores(arr[n:n + 1], stored[1][None, :]), 1.0, rtol=0, atol=1e-6):
                keep.append(n)
        if not keep and self._pinned is None:
            return
        table = self._writable(arr.shape[1])
        version = self._version()
        rows = []
        for n in keep:
            chunk, stored = chunks[n], old.get(chunks[n].id)
            same = stored is not None and chunk.content_hash and (
                stored[0].get("content_hash") == chunk.content_hash)
            rows.append(row_from_chunk(
                chunk, int(stored[0]["ingested_version"]) if stored and same else version))
        self._write(table, rows, arr[keep])

    @guarded
    def delete(self, ids: Sequence[str]) -> None:
        table = self._writable()
        if ids and self._has_table():
            self._remove(table, list(ids))

    @guarded
    def search(
        self, vectors: np.ndarray, k: int, *, filter: Filter | None = None, exact: bool = False
    ) -> list[Hits]:
        return self._search(vectors, k, normalise_filter(filter), exact)

    @guarded
    def _search(self, vectors: np.ndarray, k: int, norm: NormFilter | None,
                exact: bool) -> list[Hits]:
        """The search every public search runs, on a normalised filter (an adapter may add its
        own keys, as pgvector's acl filter does)."""
        check_k(k)
        arr = self._check_vectors(vectors, None, "query vectors")
        self._reload_state()
        table = self._table()
        if self._has_table() and len(arr):
            k = clamp_k(k, lambda: self._count(table))
        if not self._has_table() or len(arr) == 0 or k == 0:
            return [Hits([], np.zeros(0, dtype=np.float32)) for _ in range(len(arr))]
        found = self._query(table, arr, k, norm, exact)
        return [_hits(ids, scores) for ids, scores in found]

    @guarded
    def score_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]) -> list[dict[str, float]]:
        arr = self._check_vectors(vectors, len(ids), "query vectors")
        self._reload_state()
        if not self._has_table():
            return [{} for _ in ids]
        wanted = sorted({i for row in ids for i in row})
        if not wanted:
            return [{} for _ in ids]
        rows, stored = self._fetch(self._table(), wanted)
        where = {str(r["id"]): n for n, r in enumerate(rows)}
        out: list[dict[str, float]] = []
        for q, row_ids in zip(arr, ids, strict=True):
            present = [i for i in row_ids if i in where]
            if not present:
                out.append({})
                continue
            scores = cosine_scores(q[None, :], stored[[where[i] for i in present]])[0]
            out.append({i: float(s) for i, s in zip(present, scores, strict=True)})
        return out

    @guarded
    def get(self, ids: Sequence[str]) -> dict[str, Chunk]:
        self._reload_state()
        if not self._has_table() or not ids:
            return {}
        rows, _ = self._fetch(self._table(), list(ids))
        return {str(r["id"]): chunk_from_row(r) for r in rows}

    @guarded
    def chunks(self, *, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        self._reload_state()
        if not self._has_table():
            return []
        rows, _ = self._scan(self._table(), doc_ids)
        return sorted((chunk_from_row(r) for r in rows), key=lambda c: c.id)

    @guarded
    def count(self) -> int:
        self._reload_state()
        return self._count(self._table()) if self._has_table() else 0

    @guarded
    def versions(self) -> list[IndexVersion]:
        self._reload_state()
        prod = self._state["production"]
        return [
            IndexVersion(
                version=v,
                created_at=datetime.fromisoformat(created),
                production=prod is not None and int(v) == int(prod),
                meta={"table": self._table(int(v)), "sealed": int(v) in self._state["sealed"]},
            )
            for v, created in sorted(self._state["created"].items(), key=lambda kv: int(kv[0]))
        ]

    @guarded
    def current_version(self) -> str:
        self._reload_state()
        return str(self._version())

    @guarded
    def checkout(self, version: str) -> VersionedStore:
        number = self._parse_version(version)
        view = copy.copy(self)
        view._state = copy.deepcopy(self._state)
        view._pinned = number
        return view

    @guarded
    def promote(self, version: str) -> None:
        number = self._parse_version(version)

        def production(state: dict[str, Any]) -> None:
            if number not in state["sealed"]:
                state["sealed"].append(number)
            state["production"] = number

        self._update_state(production, switch=self._table(number))

    @guarded
    def rollback_to(self, version: str) -> None:
        """Make ``version`` production again (a rollback), in the same atomic switch as
        ``promote``. When the current version is the production being replaced (nothing was
        written since), ``version`` becomes current too: the gate and the monitor examine the
        current version, and they must examine what is served again."""
        number = self._parse_version(version)

        def back(state: dict[str, Any]) -> None:
            if number not in state["sealed"]:
                state["sealed"].append(number)
            if state["production"] is not None and state["current"] == state["production"]:
                state["current"] = number
            state["production"] = number

        self._update_state(back, switch=self._table(number))

    @guarded
    def discard(self, version: str, *, current: str) -> None:
        """Drop ``version``, which was never production (a reindex copy that failed its
        verification); if it is current, ``current`` (the version it was copied from) becomes
        current again. Its number is not reused."""
        number, back_to = self._parse_version(version), self._parse_version(current)
        if number == self._state["production"]:
            raise StoreError(f"{self._uri}: version {number} is production; it cannot be dropped")

        def drop(state: dict[str, Any]) -> None:
            del state["created"][str(number)]
            state["sealed"] = [v for v in state["sealed"] if int(v) != number]
            state["discarded"] = sorted({*state.get("discarded", []), number})
            if int(state["current"]) == number:
                state["current"] = back_to

        self._update_state(drop)
        self._drop_table(self._table(number))

    @guarded
    def production_version(self) -> str | None:
        self._reload_state()
        prod = self._state["production"]
        return None if prod is None else str(prod)

    @guarded
    def ids_since(self, version: str) -> list[str]:
        number = self._parse_version(version)
        if not self._has_table():
            return []
        rows = self._narrow_scan(self._table(), ("id", "ingested_version"))
        return sorted(str(r["id"]) for r in rows if int(r["ingested_version"]) > number)

    @guarded
    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``ids``, in that order (monitor, benchmarks). Qdrant stores
        cosine vectors normalised, so it returns them normalised."""
        self._reload_state()
        rows, stored = self._fetch(self._table(), list(ids)) if self._has_table() else ([], None)
        where = {str(r["id"]): n for n, r in enumerate(rows)}
        missing = [i for i in ids if i not in where]
        if missing or stored is None:
            shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
            raise StoreError(f"{self._uri}: no stored chunk {shown or ', '.join(ids[:5])}")
        picked: np.ndarray = stored[[where[i] for i in ids]]
        return picked

    @guarded
    def content_hashes(self) -> dict[str, str]:
        """id -> content_hash of every chunk of the current version (ingestion's change check)."""
        self._reload_state()
        if not self._has_table():
            return {}
        rows = self._narrow_scan(self._table(), ("id", "content_hash"))
        return {str(r["id"]): str(r.get("content_hash") or "") for r in rows}

    @guarded
    def seal(self) -> None:
        """Close the current version to writes: the next write continues in a copy. An ingestion
        seals when it completes, so a version is what one ingestion left, as with LanceDB, and a
        version a gate examined is never modified in place."""
        self._reload_state()
        cur = int(self._state["current"])
        if str(cur) in self._state["created"] and cur not in self._state["sealed"]:

            def sealed(state: dict[str, Any]) -> None:
                if cur not in state["sealed"]:
                    state["sealed"].append(cur)

            self._update_state(sealed)

    @guarded
    def new_version(self) -> str:
        """Seal the current version and continue in a copy of it (a reindex builds there)."""
        self.seal()  # saved: _writable reloads the pointers before it decides to copy
        self._writable(self._state["dim"])
        return self.current_version()

    @guarded
    def get_meta(self, key: str) -> Any:
        self._check_meta_key(key)
        return self._meta_get(key)

    @guarded
    def set_meta(self, key: str, value: Any) -> None:
        self._check_meta_key(key)
        _check_json(key, value)
        self._meta_set(key, value)

    @guarded
    def update_meta(self, key: str, change: Callable[[Any], Any]) -> Any:
        self._check_meta_key(key)

        def checked(old: Any) -> Any:
            new = change(old)
            _check_json(key, new)
            return new

        return self._locked_update(key, checked)

    def _check_meta_key(self, key: str) -> None:
        if not isinstance(key, str) or not key or key.startswith("__"):
            raise UsageError(
                f"meta key {key!r}: expected a non-empty string not starting with '__'")

    # ---- SupportsReindex (see recallwatch.stores.versioned_index) ----------------------------
    @guarded
    def reindex_problem(self) -> str | None:
        return stage_problem(self)

    def stage_index(self) -> StagedIndex:
        return VersionedIndex.stage(self)

    @guarded
    def restore_index(self, previous: Mapping[str, Any], current: Mapping[str, Any]) -> str:
        return restore(self, previous, current)

    def close(self) -> None:
        if self._pinned is None:
            self._close()

    def __enter__(self) -> VersionedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._uri!r})"


def _check_json(key: str, value: Any) -> None:
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise InputError(field=f"meta {key!r}", expected="a JSON-serialisable value",
                         found=f"<{type(value).__name__}>") from exc
