"""LanceDB on local disk, the embedded default: ``lancedb://PATH?table=NAME``.

URI parameters (all optional):

``table``            table name (default ``chunks``)
``index_threshold``  build an ANN index once the table holds this many rows (default 50000);
                     below it every search is exact (a flat scan is fast enough and has no error)
``index_type``       ``IVF_HNSW_SQ`` (default) or ``IVF_PQ``
``nprobes``, ``ef``  ANN query parameters (LanceDB's defaults when absent)
``refine_factor``    re-rank ``k × refine_factor`` ANN candidates on the full vectors (default 10
                     for IVF_PQ, whose codes alone pick poor candidates; none for IVF_HNSW_SQ)

Scores are cosine similarities recomputed exactly (float64) from the stored vectors of the hits, so
``search`` and ``score_of`` agree to the last bit and the gate's noise rule compares like with like;
an ANN index decides *which* chunks come back, never their score. Ties rank as every adapter ranks
them (``stores._common.top_k``).

Opening a store never creates it unless it is opened for writing (``create=True``, what
``recallwatch ingest`` passes): a missing directory or table is a StoreError naming the tables that
exist. LanceDB's own exceptions (a damaged table, a refused query) reach the caller as StoreError.

Versions are LanceDB table versions (one per write). ``promote`` sets the ``production`` tag, which
also protects that version from cleanup. Store metadata (embedder fingerprint, ingestion reports)
lives in ``PATH/.recallwatch/NAME.meta.json``, replaced atomically under a file lock.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast, get_args

import numpy as np
import pyarrow as pa

from recallwatch.errors import StoreError, UsageError
from recallwatch.stores._common import (
    check_unique_ids,
    check_vectors,
    chunk_from_row,
    clamp_k,
    engine_message,
    guarded,
    missing_location,
    missing_table,
    normalise_filter,
    top_k,
)
from recallwatch.stores._meta import MetaFile
from recallwatch.stores._uri import parse_store_uri, redact
from recallwatch.stores.base import Chunk, Filter, Hits, IndexVersion

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table as LanceTable

__all__ = ["LanceStore"]

IndexType = Literal["IVF_HNSW_SQ", "IVF_PQ"]
_INDEX_TYPES: tuple[str, ...] = get_args(IndexType)
_PARAMS = ("table", "index_threshold", "index_type", "nprobes", "ef", "refine_factor")
_PRODUCTION_TAG = "production"
_QUERY_BATCH = 64  # query vectors per LanceDB search call
_IN_BATCH = 2000  # ids per `id IN (...)` clause: keeps each SQL statement small
# Rebuild the ANN index when this share of rows is not in it (new rows are scanned flat meanwhile).
_REINDEX_UNINDEXED_SHARE = 0.2


class LanceStore:
    """A VectorStore over one LanceDB table."""

    # what LanceDB and pylance raise (Rust errors arrive as OSError, ValueError or RuntimeError)
    _engine_errors: ClassVar[tuple[type[BaseException], ...]] = (
        OSError, ValueError, RuntimeError, pa.ArrowException)

    def __init__(
        self, path: str | Path, table: str = "chunks", *, index_threshold: int = 50_000,
        index_type: IndexType = "IVF_HNSW_SQ", nprobes: int | None = None, ef: int | None = None,
        refine_factor: int | None = None, uri: str | None = None, version: int | None = None,
        create: bool = False,
    ) -> None:
        if index_type not in _INDEX_TYPES:
            raise UsageError(f"index_type must be one of {', '.join(_INDEX_TYPES)}, "
                             f"found {index_type!r}")
        for name, value in (("index_threshold", index_threshold), ("nprobes", nprobes),
                            ("ef", ef), ("refine_factor", refine_factor)):
            if value is not None and value < 1:
                raise UsageError(f"{name} must be at least 1, found {value}")
        import lancedb

        self.path = Path(path).expanduser()
        self.table_name = table
        self.index_threshold = index_threshold
        self.index_type: IndexType = index_type
        self.nprobes = nprobes
        self.ef = ef
        self.refine_factor = refine_factor if refine_factor is not None else (
            10 if index_type == "IVF_PQ" else None)
        self._raw_uri = uri or f"lancedb://{self.path}?table={table}"
        self._pinned = version  # a read-only view of a past version
        create = create and version is None
        try:
            if create:
                self.path.mkdir(parents=True, exist_ok=True)
            elif not self.path.is_dir():
                raise missing_location(self.uri, "LanceDB", self.path, _holds_tables)
            # connect() creates a missing directory: only reached when it exists or may be made
            self._db: DBConnection = lancedb.connect(str(self.path))
            self._tbl: LanceTable | None = None
            self._meta = MetaFile(self.path / ".recallwatch" / f"{table}.meta.json")
            if not create:
                self._tbl = self._open(version)
                if self._tbl is None:
                    raise missing_table(self.uri, "table", table, self._table_names())
        except self._engine_errors as exc:
            if isinstance(exc, UsageError):
                raise
            raise StoreError(f"{self.uri}: cannot open {self.path}: {engine_message(exc)}"
                             ) from None

    @classmethod
    def open(cls, uri: str, *, create: bool = False) -> LanceStore:
        parsed = parse_store_uri(uri)
        if parsed.scheme != "lancedb":
            raise UsageError(f"not a lancedb:// URI: {redact(uri)!r}")
        if not parsed.path:
            raise UsageError(f"store URI {redact(uri)!r} has no path: expected lancedb://PATH")
        from recallwatch._registry import suggest

        for key in parsed.params:
            if key not in _PARAMS:
                raise UsageError(f"lancedb:// URI parameter {key!r} is unknown"
                                 f"{suggest(key, list(_PARAMS))}; valid: {', '.join(_PARAMS)}")
        p = parsed.params
        return cls(
            parsed.path, p.get("table") or "chunks",
            index_threshold=_int_param(p, "index_threshold", 50_000, uri),
            index_type=p.get("index_type", "IVF_HNSW_SQ"),  # type: ignore[arg-type]
            nprobes=_int_param(p, "nprobes", None, uri), ef=_int_param(p, "ef", None, uri),
            refine_factor=_int_param(p, "refine_factor", None, uri), uri=uri, create=create,
        )

    # -- identity ------------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        return redact(self._raw_uri)

    @property
    def read_only(self) -> bool:
        return self._pinned is not None

    def __repr__(self) -> str:
        at = f" @v{self._pinned}" if self._pinned is not None else ""
        return f"LanceStore({self.uri!r}{at})"

    # -- writes --------------------------------------------------------------------------------
    @guarded
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Insert or replace chunks by id, in one commit (one new version)."""
        self._writable("upsert")
        tbl = self._table()
        vecs = check_vectors(vectors, len(chunks), "vectors",
                             None if tbl is None else self._dimension(tbl))
        if not chunks:
            return
        check_unique_ids(chunks)
        data = _to_arrow(chunks, vecs)
        if tbl is None:
            self._tbl = self._db.create_table(self.table_name, data=data)
        else:
            (tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(data))
        self._maybe_index()

    @guarded
    def delete(self, ids: Sequence[str]) -> None:
        self._writable("delete")
        tbl = self._table()
        if tbl is None or not ids:
            return
        for batch in _batches(list(ids), _IN_BATCH):
            tbl.delete(f"id IN ({_sql_list(batch)})")

    # -- reads ---------------------------------------------------------------------------------
    @guarded
    def search(
        self, vectors: np.ndarray, k: int, *, filter: Filter | None = None, exact: bool = False
    ) -> list[Hits]:
        queries = self._queries(vectors)
        tbl = self._table()
        k = clamp_k(k, lambda: 0 if tbl is None else int(tbl.count_rows()))
        if tbl is None or k == 0:
            return [Hits([], np.empty(0, dtype=np.float32)) for _ in range(len(queries))]
        where = _where(filter)
        out: list[Hits] = []
        # Several queries per LanceDB call (one scan of the data for all of them when exact).
        for start in range(0, len(queries), _QUERY_BATCH):
            block = queries[start:start + _QUERY_BATCH]
            builder = self._vector_query(tbl, block, k, where, exact)
            result = builder.select(["id", "vector", "_distance"]).to_arrow()
            ids = result.column("id").to_pylist()
            stored = _vectors(result.column("vector"))
            owner = (result.column("query_index").to_numpy() if "query_index" in
                     result.column_names else np.zeros(len(ids), dtype=np.int64))
            for n, row in enumerate(block):
                rows = np.flatnonzero(owner == n)
                out.append(top_k([ids[i] for i in rows], _cosine(row, stored[rows]), len(rows)))
        return out

    @guarded
    def query_plan(self, vector: np.ndarray, k: int = 10, *, exact: bool = False) -> str:
        """LanceDB's physical plan for the query ``search`` runs (the ANN parameters it passes,
        e.g. ``minimum_nprobes=8``, appear in it)."""
        queries = self._queries(vector)
        tbl = self._table()
        if tbl is None:
            return ""
        k = clamp_k(k, lambda: int(tbl.count_rows()))
        return str(self._vector_query(tbl, queries[:1], max(k, 1), None, exact)
                   .explain_plan(verbose=True))

    def _vector_query(self, tbl: LanceTable, block: np.ndarray, k: int, where: str | None,
                      exact: bool) -> LanceVectorQueryBuilder:
        """The one LanceDB query every search runs: cosine, k, the filter, the ANN parameters."""
        vq = cast("LanceVectorQueryBuilder", tbl.search(list(block), query_type="vector"))
        builder = vq.distance_type("cosine").limit(k)
        if where:
            builder = builder.where(where, prefilter=True)
        if exact:
            return builder.bypass_vector_index()
        if self.nprobes is not None:
            builder = builder.nprobes(self.nprobes)
        if self.ef is not None:
            builder = builder.ef(self.ef)
        if self.refine_factor is not None:
            builder = builder.refine_factor(self.refine_factor)
        return builder

    @guarded
    def score_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]) -> list[dict[str, float]]:
        queries = self._queries(vectors)
        if len(ids) != len(queries):
            raise StoreError(f"score_of: {len(queries)} query vectors but {len(ids)} id lists")
        wanted = list(dict.fromkeys(i for row in ids for i in row))
        found = self._fetch_vectors(wanted)
        out: list[dict[str, float]] = []
        for q, row_ids in zip(queries, ids, strict=True):
            present = [i for i in dict.fromkeys(row_ids) if i in found]
            if not present:
                out.append({})
                continue
            scores = _cosine(q, np.stack([found[i] for i in present]))
            out.append({i: float(s) for i, s in zip(present, scores, strict=True)})
        return out

    @guarded
    def get(self, ids: Sequence[str]) -> dict[str, Chunk]:
        tbl = self._table()
        if tbl is None or not ids:
            return {}
        out: dict[str, Chunk] = {}
        for batch in _batches(list(dict.fromkeys(ids)), _IN_BATCH):
            for row in self._rows(tbl, f"id IN ({_sql_list(batch)})"):
                out[row["id"]] = chunk_from_row(row)
        return out

    @guarded
    def chunks(self, *, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        tbl = self._table()
        if tbl is None:
            return []
        if doc_ids is None:
            return sorted((chunk_from_row(r) for r in self._rows(tbl, None)), key=lambda c: c.id)
        found: list[Chunk] = []
        for batch in _batches(list(dict.fromkeys(doc_ids)), _IN_BATCH):
            where = f"doc_id IN ({_sql_list(batch)})"
            found.extend(chunk_from_row(r) for r in self._rows(tbl, where))
        return sorted(found, key=lambda c: c.id)

    @guarded
    def count(self) -> int:
        tbl = self._table()
        return 0 if tbl is None else int(tbl.count_rows())

    @guarded
    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``ids``, in that order (monitor, benchmarks' export), as every
        versioned adapter gives them."""
        fetched = self._fetch_vectors(list(ids))
        missing = [i for i in ids if i not in fetched]
        if missing or not ids:
            shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
            raise StoreError(f"{self.uri}: no stored chunk {shown or '(no id given)'}")
        return np.stack([fetched[i] for i in ids]).astype(np.float32, copy=False)

    @guarded
    def content_hashes(self) -> dict[str, str]:
        """id -> content_hash of every chunk: one narrow scan (ingestion's change detection)."""
        tbl = self._table()
        if tbl is None:
            return {}
        t = tbl.to_lance().to_table(columns=["id", "content_hash"])
        return dict(zip(t.column("id").to_pylist(), t.column("content_hash").to_pylist(),
                        strict=True))

    # -- versions ------------------------------------------------------------------------------
    @guarded
    def versions(self) -> list[IndexVersion]:
        tbl = self._table(latest=True)
        if tbl is None:
            return []
        tags: dict[int, list[str]] = {}
        for name, info in tbl.tags.list().items():
            tags.setdefault(int(info["version"]), []).append(name)
        out = []
        for v in tbl.list_versions():
            number = int(v["version"])
            names = sorted(tags.get(number, []))
            meta = {"rows": int(v["metadata"].get("total_rows", 0)), "tags": names}
            out.append(IndexVersion(str(number), _utc(v["timestamp"]), _PRODUCTION_TAG in names,
                                    meta))
        return out

    @guarded
    def current_version(self) -> str:
        tbl = self._table()
        return "0" if tbl is None else str(tbl.version)

    @guarded
    def checkout(self, version: str) -> LanceStore:
        number = self._version_number(version)
        return LanceStore(self.path, self.table_name, index_threshold=self.index_threshold,
                          index_type=self.index_type, nprobes=self.nprobes, ef=self.ef,
                          refine_factor=self.refine_factor, uri=self._raw_uri, version=number)

    @guarded
    def promote(self, version: str) -> None:
        number = self._version_number(version)
        tbl = self._table(latest=True)
        assert tbl is not None  # _version_number found the version, so the table exists
        if _PRODUCTION_TAG in tbl.tags.list():
            tbl.tags.update(_PRODUCTION_TAG, number)
        else:
            tbl.tags.create(_PRODUCTION_TAG, number)

    @guarded
    def production_version(self) -> str | None:
        tbl = self._table(latest=True)
        if tbl is None:
            return None
        info = tbl.tags.list().get(_PRODUCTION_TAG)
        return None if info is None else str(info["version"])

    @guarded
    def ids_since(self, version: str) -> list[str]:
        """Chunks added or changed (another content hash) after ``version``; removals excluded."""
        number = self._version_number(version, allow_zero=True)
        now = self.content_hashes()
        if number == 0:
            return sorted(now)
        before = self.checkout(str(number)).content_hashes()
        return sorted(i for i, h in now.items() if before.get(i) != h)

    # -- metadata ------------------------------------------------------------------------------
    @guarded
    def get_meta(self, key: str) -> Any:
        return self._meta.get(key)

    @guarded
    def set_meta(self, key: str, value: Any) -> None:
        self._meta.set(key, value)

    def close(self) -> None:
        self._tbl = None

    # -- internals -----------------------------------------------------------------------------
    def _writable(self, what: str) -> None:
        if self._pinned is not None:
            raise StoreError(f"{what}: {self.uri} is a read-only view of version {self._pinned}")

    def _table_names(self) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            page = self._db.list_tables(page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return sorted(names)

    def _open(self, version: int | None = None) -> LanceTable | None:
        try:
            return self._db.open_table(self.table_name, version=version)
        except ValueError as exc:
            if "not found" in str(exc).lower():
                return None
            if version is not None:
                raise StoreError(f"{self.uri}: version {version} does not exist "
                                 "(or was cleaned up)") from None
            raise StoreError(f"{self.uri}: cannot open table {self.table_name!r}: {exc}") from None

    def _table(self, *, latest: bool = False) -> LanceTable | None:
        if self._tbl is None:
            self._tbl = self._open(self._pinned)
        elif self._pinned is None:
            # Another process may have written since: follow the latest version.
            self._tbl.checkout_latest()  # type: ignore[no-untyped-call]
        if latest and self._pinned is not None:
            return self._open()
        return self._tbl

    def _version_number(self, version: str, *, allow_zero: bool = False) -> int:
        try:
            number = int(version)
        except (TypeError, ValueError):
            raise UsageError(f"a LanceDB version is a number, found {version!r}") from None
        if allow_zero and number == 0:
            return 0
        known = {int(v.version) for v in self.versions()}
        if number not in known:
            listing = ", ".join(str(v) for v in sorted(known)[-10:]) or "none"
            raise StoreError(f"{self.uri} has no version {number} (latest versions: {listing})")
        return number

    def _queries(self, vectors: np.ndarray) -> np.ndarray:
        tbl = self._table()
        return check_vectors(vectors, None, "query vectors",
                             None if tbl is None else self._dimension(tbl))

    @staticmethod
    def _dimension(tbl: LanceTable) -> int:
        return int(tbl.schema.field("vector").type.list_size)

    @staticmethod
    def _rows(tbl: LanceTable, where: str | None) -> Iterator[dict[str, Any]]:
        columns = [f.name for f in tbl.schema if f.name != "vector"]
        yield from tbl.to_lance().to_table(columns=columns, filter=where).to_pylist()

    def _fetch_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        tbl = self._table()
        if tbl is None or not ids:
            return {}
        out: dict[str, np.ndarray] = {}
        for batch in _batches(ids, _IN_BATCH):
            t = tbl.to_lance().to_table(columns=["id", "vector"],
                                        filter=f"id IN ({_sql_list(batch)})")
            out.update(zip(t.column("id").to_pylist(), _vectors(t.column("vector")), strict=True))
        return out

    def _maybe_index(self) -> None:
        """Build (or rebuild) the ANN index once the table is big enough for one to pay off."""
        tbl = self._table()
        assert tbl is not None  # called right after a write
        rows = tbl.count_rows()
        if rows < self.index_threshold:
            return
        index = next((i for i in tbl.list_indices() if "vector" in i.columns), None)
        if index is not None:
            unindexed = getattr(index, "num_unindexed_rows", 0) or 0
            if unindexed <= _REINDEX_UNINDEXED_SHARE * rows:
                return
        self.build_index()

    @guarded
    def build_index(self) -> None:
        """(Re)build the ANN index on all rows now, whatever the threshold."""
        self._writable("build_index")
        from lancedb.index import IvfHnswSq, IvfPq

        tbl = self._table()
        if tbl is None:
            raise StoreError(f"{self.uri}: cannot index an empty store")
        params = self.index_parameters(tbl.count_rows(), self._dimension(tbl))
        config: IvfHnswSq | IvfPq
        if self.index_type == "IVF_PQ":
            config = IvfPq(distance_type="cosine", num_partitions=params["num_partitions"],
                           num_sub_vectors=params["num_sub_vectors"])
        else:
            config = IvfHnswSq(distance_type="cosine", num_partitions=params["num_partitions"])
        tbl.create_index("vector", config=config, replace=True)

    def index_parameters(self, rows: int, dim: int) -> dict[str, int]:
        """The index parameters build_index uses for a table of ``rows`` × ``dim`` (the reindex
        builds with the same rule)."""
        if self.index_type == "IVF_PQ":
            # ~16 dimensions per PQ sub-vector, and a divisor of dim (LanceDB requires it).
            sub = next(s for s in (dim // 16, dim // 8, dim // 4, dim // 2, 1)
                       if s and dim % s == 0)
            # sqrt(n) lists, but at least 256 training rows per list (LanceDB's own floor).
            lists = max(1, min(int(math.sqrt(rows)), rows // 256))
            return {"num_partitions": lists, "num_sub_vectors": sub}
        # HNSW does the fine search inside each partition: few, large partitions.
        return {"num_partitions": max(1, rows // 100_000)}

    @guarded
    def has_index(self) -> bool:
        tbl = self._table()
        return tbl is not None and any("vector" in i.columns for i in tbl.list_indices())


def _holds_tables(path: Path) -> bool:
    """Whether ``path`` is a LanceDB database directory (it holds ``NAME.lance`` tables)."""
    try:
        return path.is_dir() and any(p.suffix == ".lance" for p in path.iterdir())
    except OSError:
        return False


def _int_param(params: dict[str, str], key: str, default: int | None, uri: str) -> Any:
    if key not in params:
        return default
    try:
        value = int(params[key])
    except ValueError:
        raise UsageError(f"store URI {redact(uri)!r}: {key} must be an integer, "
                         f"found {params[key]!r}") from None
    if value < 1:  # LanceDB would take 0 or a negative number and fail deep inside a query
        raise UsageError(f"store URI {redact(uri)!r}: {key} must be at least 1, found {value}")
    return value


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _sql_list(values: Sequence[str]) -> str:
    return ", ".join(_sql_str(v) for v in values)


def _where(filter: Filter | None) -> str | None:
    """The shared filter (equality / IN on metadata columns) as a LanceDB SQL predicate, pushed
    down before the vector search (prefilter), so a filtered top-k is still k results."""
    norm = normalise_filter(filter)
    if not norm:
        return None
    return " AND ".join(f"{key} IN ({_sql_list(values)})" for key, values in norm.items())


def _schema(dim: int) -> pa.Schema:
    text = pa.string()
    return pa.schema([
        pa.field("id", text, nullable=False), pa.field("text", text, nullable=False),
        ("content", text), ("doc_id", text), ("domain", text), ("label", text),
        ("facets", text),
        ("valid_from", pa.date32()), ("valid_to", pa.date32()),
        ("kind", text), ("description", text), ("content_hash", text),
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ])


def _to_arrow(chunks: Sequence[Chunk], vectors: np.ndarray) -> pa.Table:
    from recallwatch.formats.corpus import content_hash

    cols: dict[str, list[Any]] = {name: [] for name in _schema(1).names if name != "vector"}
    for c in chunks:
        for name in ("id", "text", "content", "doc_id", "domain", "label", "valid_from",
                     "valid_to", "kind", "description"):
            cols[name].append(getattr(c, name))
        facets = dict(c.facets)
        cols["facets"].append(json.dumps(facets, ensure_ascii=False, sort_keys=True))
        # A chunk written without a hash gets one here, so ids_since still sees its changes.
        cols["content_hash"].append(c.content_hash or content_hash(c))
    dim = vectors.shape[1]
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel(), type=pa.float32())
    arrays = [pa.array(cols[name], type=_schema(dim).field(name).type) for name in cols]
    arrays.append(pa.FixedSizeListArray.from_arrays(flat, dim))
    return pa.Table.from_arrays(arrays, schema=_schema(dim))


def _vectors(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(arr) == 0:
        return np.empty((0, 0), dtype=np.float32)
    dim = arr.type.list_size
    flat = arr.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(-1, dim)


def _cosine(query: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Cosine similarity in float64, returned as float32: the one formula every score uses."""
    if len(stored) == 0:
        return np.empty(0, dtype=np.float32)
    q = query.astype(np.float64)
    s = stored.astype(np.float64)
    denom = np.linalg.norm(s, axis=1) * np.linalg.norm(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        sims = np.where(denom > 0, (s @ q) / denom, 0.0)
    return sims.astype(np.float32)


def _utc(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    # LanceDB reports naive local time; make it explicit so runs compare across machines.
    return value.astimezone(dt.UTC) if value.tzinfo is None else value
