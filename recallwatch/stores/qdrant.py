"""Qdrant: ``qdrant://HOST:PORT/COLLECTION`` (a server) or ``qdrant+local://PATH/COLLECTION``.

Server mode answers ``exact=True`` with Qdrant's ``exact`` search parameter (a full scan, the
ground truth); local mode always searches by brute force, so both answers are exact there. The API
key comes from ``?password_env=VAR``, ``$QDRANT_API_KEY`` or the credentials file (``api_key``).
Versions are collections ``<name>__v<N>``; the alias ``<name>`` points at production and is
switched in one ``update_collection_aliases`` call, which Qdrant applies atomically.
"""

from __future__ import annotations

import contextlib
import json
import uuid
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
from recallwatch.stores.rows import Row
from recallwatch.stores.versioned import VersionedStore, store_names

try:
    from qdrant_client import QdrantClient
    from qdrant_client import models as qm
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise NotInstalledError(f"the Qdrant adapter ({exc.name})", "qdrant") from exc

__all__ = ["QdrantStore"]

_BATCH = 256


def _point_id(chunk_id: str) -> str:
    # Qdrant accepts only integers and UUIDs as point ids; the chunk id lives in the payload.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, chunk_id))


def _is_local_qdrant(path: Path) -> bool:
    return (path / "meta.json").is_file()


class QdrantStore(VersionedStore):
    scheme = "qdrant"
    # transport errors (httpx, grpc) and the client's response errors
    _engine_errors = (UnexpectedResponse, ResponseHandlingException, OSError, RuntimeError)

    def __init__(self, uri: str, *, create: bool = False) -> None:
        parsed = parse_store_uri(uri)
        shown = redact(uri)
        self.local = parsed.scheme == "qdrant+local"
        if self.local:
            path, _, name = parsed.path.rstrip("/").rpartition("/")
            if not path:
                raise UsageError(f"store URI {shown!r}: expected qdrant+local://PATH/COLLECTION")
        else:
            path, name = "", parsed.path.strip("/")
        name = check_name(name, what="collection", uri=shown)  # before any client is opened
        # Local mode creates its directory: only open it where a store is (or may be made).
        if self.local and not create and not _is_local_qdrant(Path(path)):
            raise missing_location(shown, "Qdrant local", Path(path), _is_local_qdrant)
        try:
            if self.local:
                Path(path).mkdir(parents=True, exist_ok=True)
                self._client = QdrantClient(path=path)
            else:
                secret = resolve_secret(parsed, "api_key")
                self._client = QdrantClient(
                    host=parsed.host or "localhost", port=parsed.port or 6333,
                    api_key=secret.value if secret else None,
                    https=parsed.param("https", "false") == "true",
                    # its background version probe warns from a thread; we report errors ourselves
                    check_compatibility=False,
                )
        except RuntimeError as exc:  # local storage already opened by another client
            raise StoreError(f"{shown}: cannot open Qdrant: {exc}") from None
        self._meta_collection = f"{name}__meta"
        try:
            exists = self._client.collection_exists(self._meta_collection)
            if not exists and create:
                self._client.create_collection(
                    self._meta_collection,
                    vectors_config=qm.VectorParams(size=1, distance=qm.Distance.DOT))
            elif not exists:
                present = store_names(c.name for c in self._client.get_collections().collections)
        except Exception as exc:  # the client raises transport errors of several libraries
            self._client.close()
            raise StoreError(f"{shown}: cannot reach Qdrant: {exc}") from None
        if not exists and not create:
            self._client.close()
            raise missing_table(shown, "collection", name, present)
        self._lock_path = (Path(path) / ".recallwatch" / f"{name}.meta.lock" if self.local
                           else None)
        super().__init__(shown, name)

    @classmethod
    def open(cls, uri: str, *, create: bool = False) -> QdrantStore:
        return cls(uri, create=create)

    @staticmethod
    def _filter(
        filter: NormFilter | None, doc_ids: Sequence[str] | None = None
    ) -> qm.Filter | None:
        conditions: list[Any] = [
            qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values)))
            for key, values in (filter or {}).items()
        ]
        if doc_ids is not None:
            conditions.append(qm.FieldCondition(key="doc_id", match=qm.MatchAny(any=list(doc_ids))))
        return qm.Filter(must=conditions) if conditions else None

    @staticmethod
    def _unpack(points: Sequence[Any]) -> tuple[list[Row], np.ndarray]:
        rows = [dict(p.payload) for p in points]
        if not points:
            return rows, np.zeros((0, 0), dtype=np.float32)
        return rows, np.asarray([p.vector for p in points], dtype=np.float32)

    # ---- engine primitives -------------------------------------------------------------------
    def _create_table(self, table: str, dim: int) -> None:
        self._client.create_collection(
            table, vectors_config=qm.VectorParams(size=dim, distance=qm.Distance.COSINE))
        if not self.local:  # local mode has no payload indexes (and warns if asked)
            for key in ("doc_id", "domain", "label", "kind"):
                self._client.create_payload_index(table, key, qm.PayloadSchemaType.KEYWORD)

    def _drop_table(self, table: str) -> None:
        self._client.delete_collection(table)

    def _write(self, table: str, rows: list[Row], vectors: np.ndarray) -> None:
        for start in range(0, len(rows), _BATCH):
            points = [
                qm.PointStruct(id=_point_id(r["id"]), vector=v.tolist(), payload=r)
                for r, v in zip(rows[start:start + _BATCH], vectors[start:start + _BATCH],
                                strict=True)
            ]
            self._client.upsert(table, points=points, wait=True)

    def _remove(self, table: str, ids: Sequence[str]) -> None:
        self._client.delete(table, points_selector=qm.PointIdsList(
            points=[_point_id(i) for i in ids]), wait=True)

    def _query(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None, exact: bool
    ) -> list[tuple[list[str], list[float]]]:
        # Local mode is brute force already, and warns when given search parameters.
        params = qm.SearchParams(exact=True) if exact and not self.local else None
        requests = [
            qm.QueryRequest(query=q.tolist(), limit=k, filter=self._filter(filter),
                            params=params, with_payload=["id"])
            for q in vectors
        ]
        out = []
        for start in range(0, len(requests), _BATCH):
            for answer in self._client.query_batch_points(table, requests[start:start + _BATCH]):
                points = answer.points
                out.append(([str((p.payload or {})["id"]) for p in points],
                            [float(p.score) for p in points]))
        return out

    def _fetch(self, table: str, ids: Sequence[str]) -> tuple[list[Row], np.ndarray]:
        points = self._client.retrieve(table, ids=[_point_id(i) for i in ids],
                                       with_payload=True, with_vectors=True)
        return self._unpack(points)

    def _scan(self, table: str, doc_ids: Sequence[str] | None) -> tuple[list[Row], np.ndarray]:
        points: list[Any] = []
        offset: Any = None
        while True:
            batch, offset = self._client.scroll(
                table, scroll_filter=self._filter(None, doc_ids), limit=1000, offset=offset,
                with_payload=True, with_vectors=True)
            points.extend(batch)
            if offset is None:
                return self._unpack(points)

    def _count(self, table: str) -> int:
        return int(self._client.count(table, exact=True).count)

    def _meta_get(self, key: str) -> Any:
        found = self._client.retrieve(self._meta_collection, ids=[_point_id(key)],
                                      with_payload=True)
        return json.loads((found[0].payload or {})["value"]) if found else None

    def _meta_set(self, key: str, value: Any) -> None:
        self._client.upsert(self._meta_collection, wait=True, points=[qm.PointStruct(
            id=_point_id(key), vector=[1.0], payload={"key": key, "value": json.dumps(value)})])

    def _meta_lock(self) -> contextlib.AbstractContextManager[Any]:
        # Local mode: a file lock in its directory. A server offers no lock: the base's lock
        # serialises the updaters of this process only.
        if self._lock_path is None:
            return super()._meta_lock()
        return file_lock(self._lock_path)

    def _switch_production(self, table: str) -> None:
        current = {a.alias_name for a in self._client.get_aliases().aliases}
        ops: list[Any] = []
        if self.name in current:
            ops.append(qm.DeleteAliasOperation(delete_alias=qm.DeleteAlias(alias_name=self.name)))
        ops.append(qm.CreateAliasOperation(
            create_alias=qm.CreateAlias(collection_name=table, alias_name=self.name)))
        self._client.update_collection_aliases(change_aliases_operations=ops)

    def _close(self) -> None:
        self._client.close()
