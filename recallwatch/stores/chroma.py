"""Chroma (persistent client): ``chroma://PATH?collection=NAME``.

Limits, documented and tested: Chroma has no exact search, so ``exact=True`` ranks the vectors
exported from the collection with numpy (exact, but it reads the whole version into memory); and
it has no aliases, so production is a pointer recallwatch keeps (switched by one atomic record
write) rather than a name an application can query. Versions are collections ``<name>__v<N>``.
Metadata values cannot be NULL: an absent field is stored as ``""`` and read back as None.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.errors import NotInstalledError, StoreError
from recallwatch.stores._meta import file_lock
from recallwatch.stores._uri import parse_store_uri, redact
from recallwatch.stores.checks import NormFilter, check_name
from recallwatch.stores.failures import missing_location, missing_table
from recallwatch.stores.rows import CHUNK_FIELDS, Row
from recallwatch.stores.versioned import VersionedStore, store_names

try:
    import chromadb
    from chromadb.config import Settings
    from chromadb.errors import ChromaError, NotFoundError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise NotInstalledError(f"the Chroma adapter ({exc.name})", "chroma") from exc

__all__ = ["ChromaStore"]

_FIELDS = (*CHUNK_FIELDS, "ingested_version")
_BATCH = 1000


def _where(filter: NormFilter | None, doc_ids: Sequence[str] | None = None) -> Any:
    clauses: list[dict[str, Any]] = [
        {key: {"$in": list(values)}} for key, values in (filter or {}).items()
    ]
    if doc_ids is not None:
        clauses.append({"doc_id": {"$in": list(doc_ids)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _is_chroma(path: Path) -> bool:
    return (path / "chroma.sqlite3").is_file()


class ChromaStore(VersionedStore):
    scheme = "chroma"
    native_exact = False
    _engine_errors = (ChromaError, ValueError)

    def __init__(self, uri: str, *, create: bool = False) -> None:
        parsed = parse_store_uri(uri)
        shown = redact(uri)
        name = check_name(parsed.param("collection"), what="collection", uri=shown)
        if not parsed.path:
            raise StoreError(f"store URI {shown!r}: expected chroma://PATH?collection=NAME")
        path = Path(parsed.path)
        # The client creates its directory and database file: only open it where a store is
        # (or, for writing, may be made).
        if not create and not _is_chroma(path):
            raise missing_location(shown, "Chroma", path, _is_chroma)
        try:
            path.mkdir(parents=True, exist_ok=True)
            # Telemetry off: recallwatch never talks to the network on its own.
            self._client = chromadb.PersistentClient(
                path=str(path.resolve()), settings=Settings(anonymized_telemetry=False))
            if create:
                self._metas = self._client.get_or_create_collection(f"{name}__meta")
            else:
                try:
                    self._metas = self._client.get_collection(f"{name}__meta")
                except NotFoundError:
                    present = store_names(c.name for c in self._client.list_collections())
                    raise missing_table(shown, "collection", name, present) from None
        except (ChromaError, OSError) as exc:
            raise StoreError(f"{shown}: cannot open Chroma: {exc}") from None
        self._lock_path = path / ".recallwatch" / f"{name}.meta.lock"
        super().__init__(shown, name)

    @classmethod
    def open(cls, uri: str, *, create: bool = False) -> ChromaStore:
        return cls(uri, create=create)

    def _collection(self, table: str) -> Any:
        return self._client.get_collection(table)

    def _rows(self, got: Any) -> tuple[list[Row], np.ndarray]:
        rows = [{**dict(meta), "id": cid} for cid, meta in zip(got["ids"], got["metadatas"],
                                                                strict=True)]
        if not rows:
            return rows, np.zeros((0, self._state["dim"] or 0), dtype=np.float32)
        return rows, np.asarray(got["embeddings"], dtype=np.float32)

    # ---- engine primitives -------------------------------------------------------------------
    def _create_table(self, table: str, dim: int) -> None:
        self._client.create_collection(table, configuration={"hnsw": {"space": "cosine"}})

    def _drop_table(self, table: str) -> None:
        self._client.delete_collection(table)

    def _write(self, table: str, rows: list[Row], vectors: np.ndarray) -> None:
        collection = self._collection(table)
        for start in range(0, len(rows), _BATCH):
            part = rows[start:start + _BATCH]
            collection.upsert(
                ids=[r["id"] for r in part],
                embeddings=vectors[start:start + _BATCH],
                metadatas=[{k: ("" if r[k] is None else r[k]) for k in _FIELDS[1:]} for r in part],
            )

    def _remove(self, table: str, ids: Sequence[str]) -> None:
        self._collection(table).delete(ids=list(ids))

    def _query(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None, exact: bool
    ) -> list[tuple[list[str], list[float]]]:
        if exact:
            return self._exact_by_export(table, vectors, k, filter)
        collection = self._collection(table)
        # Chroma complains when asked for more results than the collection holds.
        n = min(k, collection.count())
        if n == 0:
            return [([], []) for _ in vectors]
        found = collection.query(query_embeddings=vectors, n_results=n, where=_where(filter),
                                 include=["distances"])
        return [([str(i) for i in ids], [1.0 - float(d) for d in dists])
                for ids, dists in zip(found["ids"], found["distances"] or [], strict=True)]

    def _fetch(self, table: str, ids: Sequence[str]) -> tuple[list[Row], np.ndarray]:
        if not ids:  # Chroma reads an empty id list as a mistake
            return self._rows({"ids": [], "metadatas": []})
        got = self._collection(table).get(ids=list(ids), include=["metadatas", "embeddings"])
        return self._rows(got)

    def _scan(self, table: str, doc_ids: Sequence[str] | None) -> tuple[list[Row], np.ndarray]:
        collection = self._collection(table)
        rows: list[Row] = []
        parts: list[np.ndarray] = []
        offset = 0
        while True:
            got = collection.get(where=_where(None, doc_ids), limit=_BATCH, offset=offset,
                                 include=["metadatas", "embeddings"])
            batch_rows, batch_vectors = self._rows(got)
            rows.extend(batch_rows)
            parts.append(batch_vectors)
            if len(batch_rows) < _BATCH:
                return rows, np.concatenate(parts)
            offset += _BATCH

    def _count(self, table: str) -> int:
        return int(self._collection(table).count())

    def _meta_lock(self) -> contextlib.AbstractContextManager[Any]:
        return file_lock(self._lock_path)

    def _meta_get(self, key: str) -> Any:
        got = self._metas.get(ids=[key], include=["documents"])
        documents = got["documents"] or []
        return json.loads(documents[0]) if documents else None

    def _meta_set(self, key: str, value: Any) -> None:
        self._metas.upsert(ids=[key], documents=[json.dumps(value)],
                           embeddings=np.asarray([[0.0, 1.0]], dtype=np.float32))
