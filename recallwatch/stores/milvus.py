"""Milvus: ``milvus://PATH.db?collection=NAME`` (Milvus Lite, in-process) or
``milvus://HOST:PORT?collection=NAME`` (a server; token from ``password_env`` or the credentials
file). Query parameters: ``m``, ``ef_construction``, ``ef`` (HNSW, cosine).

Milvus has no per-query exact switch: ``exact=True`` ranks the exported vectors with numpy (still
exact, but it reads the version's vectors). Versions are collections ``<name>__v<N>``; the alias
``<name>`` points at production and moves with ``alter_alias``, which Milvus applies atomically.
Milvus scalar columns have no NULL here, so an absent field is stored as ``""`` and read back as
None (an empty ``content`` therefore reads back as None).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.errors import NotInstalledError, StoreError, UsageError
from recallwatch.stores._credentials import resolve_secret
from recallwatch.stores._meta import file_lock
from recallwatch.stores._uri import parse_store_uri, redact
from recallwatch.stores.checks import NormFilter, check_name
from recallwatch.stores.failures import missing_location, missing_table
from recallwatch.stores.rows import CHUNK_FIELDS, Row
from recallwatch.stores.versioned import VersionedStore, store_names

try:
    from pymilvus import DataType, MilvusClient
    from pymilvus.exceptions import MilvusException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise NotInstalledError(f"the Milvus adapter ({exc.name})", "milvus") from exc

__all__ = ["MilvusStore"]

_TEXT = CHUNK_FIELDS[1:]  # every chunk field but the id
_FIELDS = ["id", *_TEXT, "ingested_version"]
_MAX_VARCHAR = 65535
_BATCH = 1000
_MAX_TOPK = 16384  # Milvus refuses a deeper search


def _int(parsed: Any, name: str, default: int) -> int:
    raw = parsed.param(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"store URI {redact(parsed.raw)!r}: {name} must be a positive integer, "
                         f"found {raw!r}")
    return int(raw)


def _expr(filter: NormFilter | None, doc_ids: Sequence[str] | None = None) -> str:
    # json.dumps gives double-quoted, escaped string literals, which Milvus expressions accept.
    parts = [f"{key} in {json.dumps(list(values))}" for key, values in (filter or {}).items()]
    if doc_ids is not None:
        parts.append(f"doc_id in {json.dumps(list(doc_ids))}")
    return " and ".join(parts)


class MilvusStore(VersionedStore):
    scheme = "milvus"
    native_exact = False
    _engine_errors = (MilvusException,)

    def __init__(self, uri: str, *, create: bool = False) -> None:
        parsed = parse_store_uri(uri)
        shown = redact(uri)
        name = check_name(parsed.param("collection"), what="collection", uri=shown)
        self.m = _int(parsed, "m", 16)
        self.ef_construction = _int(parsed, "ef_construction", 64)
        self.ef = _int(parsed, "ef", 64)
        self.lite = parsed.path.endswith(".db")
        # Milvus Lite creates its database (a file, or a directory in Milvus Lite 3): only open
        # it where one is, or may be made.
        if self.lite and not create and not Path(parsed.path).exists():
            raise missing_location(shown, "Milvus Lite", Path(parsed.path),
                                   lambda p: p.suffix == ".db" and p.exists())
        try:
            if self.lite:
                Path(parsed.path).parent.mkdir(parents=True, exist_ok=True)
                self._client = MilvusClient(str(Path(parsed.path).resolve()))
            else:
                secret = resolve_secret(parsed)
                self._client = MilvusClient(
                    f"http://{parsed.host or 'localhost'}:{parsed.port or 19530}",
                    token=secret.value if secret else "")
            self._meta_collection = f"{name}__meta"
            self._loaded: set[str] = set()
            if not self._client.has_collection(self._meta_collection):
                if not create:
                    present = store_names(self._client.list_collections())
                    self._client.close()
                    raise missing_table(shown, "collection", name, present)
                self._client.create_collection(
                    self._meta_collection, dimension=2, id_type="string", max_length=512)
            self._ready(self._meta_collection)
        except MilvusException as exc:
            raise StoreError(f"{shown}: cannot open Milvus: {exc.message}") from None
        db = Path(parsed.path)
        self._lock_path = (db.parent / ".recallwatch" / f"{db.name}.{name}.meta.lock"
                           if self.lite else None)
        super().__init__(shown, name)

    @classmethod
    def open(cls, uri: str, *, create: bool = False) -> MilvusStore:
        return cls(uri, create=create)

    def _ready(self, table: str) -> None:
        # After a server restart collections come back released: load each once before use.
        if table not in self._loaded:
            self._client.load_collection(table)
            self._loaded.add(table)

    def _rows(self, found: Sequence[dict[str, Any]]) -> tuple[list[Row], np.ndarray]:
        rows = [{k: r.get(k) for k in _FIELDS} for r in found]
        if not found:
            return rows, np.zeros((0, self._state["dim"] or 0), dtype=np.float32)
        return rows, np.asarray([r["vector"] for r in found], dtype=np.float32)

    # ---- engine primitives -------------------------------------------------------------------
    def _create_table(self, table: str, dim: int) -> None:
        schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=_MAX_VARCHAR)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        for name in _TEXT:
            schema.add_field(name, DataType.VARCHAR, max_length=_MAX_VARCHAR)
        schema.add_field("ingested_version", DataType.INT64)
        index = self._client.prepare_index_params()
        index.add_index("vector", index_type="HNSW", metric_type="COSINE",
                        params={"M": self.m, "efConstruction": self.ef_construction})
        self._client.create_collection(table, schema=schema, index_params=index)

    def _drop_table(self, table: str) -> None:
        self._client.drop_collection(table)

    def _write(self, table: str, rows: list[Row], vectors: np.ndarray) -> None:
        data = [
            {**{k: ("" if r[k] is None else r[k]) for k in _FIELDS}, "vector": v.tolist()}
            for r, v in zip(rows, vectors, strict=True)
        ]
        for start in range(0, len(data), _BATCH):
            self._client.upsert(table, data[start:start + _BATCH])

    def _remove(self, table: str, ids: Sequence[str]) -> None:
        self._ready(table)
        self._client.delete(table, ids=list(ids))

    def _query(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None, exact: bool
    ) -> list[tuple[list[str], list[float]]]:
        if exact:
            return self._exact_by_export(table, vectors, k, filter)
        if k > _MAX_TOPK:
            raise StoreError(f"{self._uri}: Milvus returns at most {_MAX_TOPK} results per query; "
                             f"asked for {k} (search with exact=True, or a smaller k)")
        self._ready(table)
        out: list[tuple[list[str], list[float]]] = []
        for start in range(0, len(vectors), _BATCH):
            found = self._client.search(
                table, data=vectors[start:start + _BATCH].tolist(), limit=k,
                filter=_expr(filter), output_fields=["id"],
                search_params={"metric_type": "COSINE", "params": {"ef": max(self.ef, k)}})
            out.extend(([str(h["id"]) for h in hits], [float(h["distance"]) for h in hits])
                       for hits in found)
        return out

    def _fetch(self, table: str, ids: Sequence[str]) -> tuple[list[Row], np.ndarray]:
        self._ready(table)
        if not ids:
            return self._rows([])
        return self._rows(self._client.get(table, ids=list(ids),
                                           output_fields=[*_FIELDS, "vector"]))

    def _scan(self, table: str, doc_ids: Sequence[str] | None) -> tuple[list[Row], np.ndarray]:
        self._ready(table)
        found: list[dict[str, Any]] = []
        fields = [*_FIELDS, "vector"]
        if self.lite:
            # Lite has no timestamp service, so query_iterator logs an ERROR traceback on every
            # call; plain offsets work there (a server caps offset + limit at 16384).
            while True:
                batch = self._client.query(table, filter=_expr(None, doc_ids),
                                           output_fields=fields, limit=_BATCH, offset=len(found))
                found.extend(batch)
                if len(batch) < _BATCH:
                    break
        else:
            iterator = self._client.query_iterator(
                table, batch_size=_BATCH, filter=_expr(None, doc_ids), output_fields=fields)
            while batch := iterator.next():
                found.extend(batch)
            iterator.close()
        return self._rows(found)

    def _count(self, table: str) -> int:
        self._ready(table)
        return int(self._client.query(table, filter="", output_fields=["count(*)"])[0]["count(*)"])

    def _meta_get(self, key: str) -> Any:
        found = self._client.get(self._meta_collection, ids=[key], output_fields=["value"])
        return json.loads(found[0]["value"]) if found else None

    def _meta_set(self, key: str, value: Any) -> None:
        self._client.upsert(self._meta_collection,
                            [{"id": key, "vector": [0.0, 1.0], "value": json.dumps(value)}])

    def _meta_lock(self) -> contextlib.AbstractContextManager[Any]:
        # Milvus Lite: a file lock beside its database. A server offers no lock: the base's lock
        # serialises the updaters of this process only.
        if self._lock_path is None:
            return super()._meta_lock()
        return file_lock(self._lock_path)

    def _switch_production(self, table: str) -> None:
        aliases = set()
        for collection in self._client.list_collections():
            aliases.update(self._client.list_aliases(collection).get("aliases", []))
        if self.name in aliases:
            self._client.alter_alias(table, self.name)
        else:
            self._client.create_alias(table, self.name)

    def _close(self) -> None:
        self._client.close()
