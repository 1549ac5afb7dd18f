"""LanceDB on local disk, the embedded default (one idea, one class: past 400 lines because it is
every VectorStore method and capability over one LanceDB table): ``lancedb://PATH?table=NAME``.

URI parameters (all optional):

``table``            table name (default ``chunks``)
``index_threshold``  build an ANN index once the table holds this many rows (default 50000);
                     below it every search is exact (a flat scan is fast enough and has no error)
``index_type``       ``IVF_HNSW_SQ`` (default) or ``IVF_PQ``
``nprobes``, ``ef``  ANN query parameters (LanceDB's defaults when absent)
``refine_factor``    re-rank ``k × refine_factor`` ANN candidates on the full vectors (default 10
                     for IVF_PQ, whose codes alone pick poor candidates; none for IVF_HNSW_SQ)

Scores are cosine similarities recomputed exactly from the stored vectors of the hits
(:func:`recallwatch.vectors.cosine_scores`), so ``search`` and ``score_of`` agree to the last bit
and the gate's noise rule compares like with like; an ANN index decides *which* chunks come back,
never their score. Ties rank as every adapter ranks them (:func:`recallwatch.vectors.top_k`).

Opening a store never creates it unless it is opened for writing (``create=True``, what
``recallwatch ingest`` passes): a missing directory or table is a StoreError naming the tables that
exist. LanceDB's own exceptions (a damaged table, a refused query) reach the caller as StoreError.

Versions are LanceDB table versions (one per write). ``promote`` sets the ``production`` tag, which
also protects that version from cleanup. Store metadata (embedder fingerprint, ingestion reports)
lives in ``PATH/.recallwatch/NAME.meta.json``, replaced atomically under a file lock.

The table layout is :mod:`recallwatch.stores.lancedb_table`; the ANN index (its build rule,
inspection, reindex and rollback) is :mod:`recallwatch.stores.lancedb_index`. Reads go through
pylance alone (:mod:`recallwatch.stores.lancedb_read`): ``lancedb`` is imported only to write, to
build an index, or to search one, so a gate on a store without an ANN index never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast, get_args

import numpy as np
import pyarrow as pa

from recallwatch.errors import StoreError, UsageError
from recallwatch.stores._meta import MetaFile
from recallwatch.stores._uri import parse_store_uri, redact
from recallwatch.stores.acl import visible_sql
from recallwatch.stores.arrow import vectors_of
from recallwatch.stores.base import (
    Chunk,
    Filter,
    Hits,
    IndexState,
    IndexVersion,
    StagedIndex,
    SupportsAclFilter,
    SupportsContentHashes,
    SupportsIndexInspection,
    SupportsIndexSize,
    SupportsIndexVariants,
    SupportsMetaUpdate,
    SupportsReindex,
    SupportsVectors,
    SupportsVectorScan,
)
from recallwatch.stores.checks import check_unique_ids, check_vectors, clamp_k
from recallwatch.stores.failures import engine_message, guarded, missing_location, missing_table
from recallwatch.stores.lancedb_index import (
    IndexType,
    index_config,
    index_parameters,
    needs_index,
    vector_index,
)
from recallwatch.stores.lancedb_read import ReadTable, exact_candidates
from recallwatch.stores.lancedb_table import (
    batches,
    fetch_vectors,
    rows,
    set_tag,
    sql_list,
    tagged_version,
    to_arrow,
    version_list,
    where,
)
from recallwatch.stores.rows import chunk_from_row
from recallwatch.vectors import cosine_scores, top_k

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table as LanceTable

__all__ = ["LanceStore"]

_INDEX_TYPES: tuple[str, ...] = get_args(IndexType)
_PARAMS = ("table", "index_threshold", "index_type", "nprobes", "ef", "refine_factor")
_PRODUCTION_TAG = "production"
_QUERY_BATCH = 64  # query vectors per LanceDB search call


class LanceStore(SupportsVectors, SupportsVectorScan, SupportsAclFilter, SupportsContentHashes,
                 SupportsMetaUpdate, SupportsReindex, SupportsIndexInspection, SupportsIndexSize,
                 SupportsIndexVariants):
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
            self._connection: DBConnection | None = None  # lancedb's, opened when first needed
            self._engine_tbl: LanceTable | None = None
            self._tbl: ReadTable | None = None
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
        data = to_arrow(chunks, vecs)
        if tbl is None:
            self._engine_tbl = self._db.create_table(self.table_name, data=data)
        else:
            (self._engine().merge_insert("id").when_matched_update_all()
             .when_not_matched_insert_all().execute(data))
        tbl = self._table()
        assert tbl is not None  # just written
        if needs_index(tbl, self.index_threshold):
            self.build_index()

    @guarded
    def delete(self, ids: Sequence[str]) -> None:
        self._writable("delete")
        tbl = self._table()
        if tbl is None or not ids:
            return
        engine = self._engine()
        for batch in batches(list(ids)):
            engine.delete(f"id IN ({sql_list(batch)})")

    # -- reads ---------------------------------------------------------------------------------
    @guarded
    def search(
        self, vectors: np.ndarray, k: int, *, filter: Filter | None = None, exact: bool = False
    ) -> list[Hits]:
        return self._search(vectors, k, where(filter), exact)

    @guarded
    def search_visible(self, vectors: np.ndarray, k: int, groups: Sequence[str], *,
                       filter: Filter | None = None, exact: bool = False) -> list[Hits]:
        base, visible = where(filter), visible_sql("facets", groups)
        return self._search(vectors, k, visible if base is None else f"({base}) AND {visible}",
                            exact)

    def _search(self, vectors: np.ndarray, k: int, predicate: str | None,
                exact: bool) -> list[Hits]:
        queries = self._queries(vectors)
        tbl = self._table()
        k = clamp_k(k, lambda: 0 if tbl is None else int(tbl.count_rows()))
        if tbl is None or k == 0:
            return [Hits([], np.empty(0, dtype=np.float32)) for _ in range(len(queries))]
        out: list[Hits] = []
        if exact or vector_index(tbl) is None:
            # no ANN index to ask: one scan of the stored vectors for every query, on pylance
            for row, (ids, stored) in zip(queries, exact_candidates(tbl, queries, k, predicate),
                                          strict=True):
                scores = cosine_scores(row, stored)[0] if ids else np.empty(0, dtype=np.float32)
                out.append(Hits(*top_k(ids, scores, len(ids))))
            return out
        engine = self._engine()
        # LanceDB searches the index alone; the rows outside it are scanned here once for every
        # query of a block (see recallwatch.stores.lancedb_read)
        outside = tbl.unindexed_fragments()
        for start in range(0, len(queries), _QUERY_BATCH):
            block = queries[start:start + _QUERY_BATCH]
            builder = self._vector_query(engine, block, k, predicate, exact)
            if outside:
                builder = builder.fast_search()
            result = builder.select(["id", "vector", "_distance"]).to_arrow()
            ids = result.column("id").to_pylist()
            stored = vectors_of(result.column("vector"))
            owner = (result.column("query_index").to_numpy() if "query_index" in
                     result.column_names else np.zeros(len(ids), dtype=np.int64))
            extra = list(exact_candidates(tbl, block, k, predicate, outside)) if outside else None
            for n, row in enumerate(block):
                rows = np.flatnonzero(owner == n)
                found = [ids[i] for i in rows]
                vectors = stored[rows] if len(rows) else np.empty((0, queries.shape[1]),
                                                                  dtype=np.float32)
                if extra is not None and extra[n][0]:
                    found = found + extra[n][0]
                    vectors = np.concatenate([vectors, extra[n][1]])
                scores = cosine_scores(row, vectors)[0] if found else np.empty(0, np.float32)
                out.append(Hits(*top_k(found, scores, k)))
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
        return str(self._vector_query(self._engine(), queries[:1], max(k, 1), None, exact)
                   .explain_plan(verbose=True))

    def _vector_query(self, tbl: LanceTable, block: np.ndarray, k: int, predicate: str | None,
                      exact: bool) -> LanceVectorQueryBuilder:
        """The one LanceDB query every search runs: cosine, k, the filter, the ANN parameters."""
        vq = cast("LanceVectorQueryBuilder", tbl.search(list(block), query_type="vector"))
        builder = vq.distance_type("cosine").limit(k)
        if predicate:
            builder = builder.where(predicate, prefilter=True)
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
            scores = cosine_scores(q, np.stack([found[i] for i in present]))[0]
            out.append({i: float(s) for i, s in zip(present, scores, strict=True)})
        return out

    @guarded
    def get(self, ids: Sequence[str]) -> dict[str, Chunk]:
        tbl = self._table()
        if tbl is None or not ids:
            return {}
        out: dict[str, Chunk] = {}
        for batch in batches(list(dict.fromkeys(ids))):
            for row in rows(tbl, f"id IN ({sql_list(batch)})"):
                out[row["id"]] = chunk_from_row(row)
        return out

    @guarded
    def chunks(self, *, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        tbl = self._table()
        if tbl is None:
            return []
        if doc_ids is None:
            return sorted((chunk_from_row(r) for r in rows(tbl, None)), key=lambda c: c.id)
        found: list[Chunk] = []
        for batch in batches(list(dict.fromkeys(doc_ids))):
            found.extend(chunk_from_row(r)
                         for r in rows(tbl, f"doc_id IN ({sql_list(batch)})"))
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

    def scan_vectors(self, rows: int) -> Iterator[tuple[list[str], np.ndarray]]:
        """Shards of at most ``rows`` (id, vector) rows of the version read: one pylance scan of
        the two columns, in the dataset's storage order (fragments, then rows), which a version
        never changes."""
        if rows < 1:
            raise UsageError(f"rows must be at least 1, found {rows}")
        tbl = self._table()
        if tbl is None:
            return
        scanner = tbl.to_lance().scanner(columns=["id", "vector"], batch_size=rows,
                                         strict_batch_size=True, scan_in_order=True)
        try:
            for batch in scanner.to_batches():
                if batch.num_rows:
                    yield batch.column(0).to_pylist(), vectors_of(batch.column(1))
        except self._engine_errors as exc:  # a generator is not covered by @guarded
            raise StoreError(f"{self.uri}: scan_vectors failed: {engine_message(exc)}"
                             ) from exc

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
        return [] if tbl is None else version_list(tbl, _PRODUCTION_TAG)

    @guarded
    def current_version(self) -> str:
        tbl = self._table()
        return "0" if tbl is None else str(tbl.version)

    @guarded
    def checkout(self, version: str) -> LanceStore:
        return self.view(self._version_number(version))

    def view(self, version: int) -> LanceStore:
        """A read-only view of table version ``version`` with this store's parameters (a
        version checked out, or a detached one a reindex verifies)."""
        return LanceStore(self.path, self.table_name, index_threshold=self.index_threshold,
                          index_type=self.index_type, nprobes=self.nprobes, ef=self.ef,
                          refine_factor=self.refine_factor, uri=self._raw_uri, version=version)

    @guarded
    def promote(self, version: str) -> None:
        number = self._version_number(version)
        tbl = self._table(latest=True)
        assert tbl is not None  # _version_number found the version, so the table exists
        set_tag(tbl.tags, _PRODUCTION_TAG, number)

    @guarded
    def production_version(self) -> str | None:
        tbl = self._table(latest=True)
        return None if tbl is None else tagged_version(tbl, _PRODUCTION_TAG)

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

    @guarded
    def update_meta(self, key: str, change: Callable[[Any], Any]) -> Any:
        return self._meta.update(key, change)

    # -- the ANN index (see recallwatch.stores.lancedb_index) ----------------------------------
    def index_state(self) -> IndexState | None:
        from recallwatch.stores.lancedb_index import LanceIndex

        return LanceIndex(self).state()

    def index_problem(self) -> str | None:
        from recallwatch.stores.lancedb_index import LanceIndex

        return LanceIndex(self).problem()

    def index_centroids(self) -> np.ndarray | None:
        from recallwatch.stores.lancedb_index import LanceIndex

        return LanceIndex(self).centroids()

    def index_bytes(self) -> int:
        from recallwatch.stores.lancedb_index import LanceIndex

        return LanceIndex(self).size_bytes()

    @guarded
    def reindex_problem(self) -> str | None:
        from recallwatch.stores.lancedb_index import LanceIndex

        return LanceIndex(self).stage_problem()

    def stage_index(self) -> StagedIndex:
        from recallwatch.stores.lancedb_index import LanceIndex, StagedLanceIndex

        return StagedLanceIndex(LanceIndex(self))

    def restore_index(self, previous: Mapping[str, Any], current: Mapping[str, Any]) -> str:
        from recallwatch.stores.lancedb_index import LanceIndex, restore

        return restore(LanceIndex(self), previous, current)

    def close(self) -> None:
        self._tbl = None
        self._engine_tbl = None

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

    @property
    def _db(self) -> DBConnection:
        if self._connection is None:
            import lancedb

            # connect() creates a missing directory: only reached when it exists or may be made
            self._connection = lancedb.connect(str(self.path))
        return self._connection

    def _open(self, version: int | None = None) -> ReadTable | None:
        location = self.path / f"{self.table_name}.lance"
        if not location.is_dir():
            return None
        try:
            return ReadTable(location, version)
        except self._engine_errors as exc:
            if version is not None and "not found" in str(exc).lower():
                raise StoreError(f"{self.uri}: version {version} does not exist "
                                 "(or was cleaned up)") from None
            raise StoreError(f"{self.uri}: cannot open table {self.table_name!r}: "
                             f"{engine_message(exc)}") from None

    def _engine(self) -> LanceTable:
        """The table through lancedb, at this store's version: to write, index or ANN-search."""
        if self._engine_tbl is None:
            try:
                self._engine_tbl = self._db.open_table(self.table_name, version=self._pinned)
            except ValueError as exc:
                raise StoreError(f"{self.uri}: cannot open table {self.table_name!r}: "
                                 f"{engine_message(exc)}") from None
        elif self._pinned is None:
            self._engine_tbl.checkout_latest()  # type: ignore[no-untyped-call]
        return self._engine_tbl

    def _table(self, *, latest: bool = False) -> ReadTable | None:
        if self._tbl is None:
            self._tbl = self._open(self._pinned)
        elif self._pinned is None:
            # Another process may have written since: follow the latest version.
            self._tbl.checkout_latest()
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
    def _dimension(tbl: ReadTable) -> int:
        return int(tbl.schema.field("vector").type.list_size)

    def _fetch_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        tbl = self._table()
        return {} if tbl is None or not ids else fetch_vectors(tbl, ids)

    @guarded
    def build_index(self) -> None:
        """(Re)build the ANN index on all rows now, whatever the threshold."""
        self._writable("build_index")
        tbl = self._table()
        if tbl is None:
            raise StoreError(f"{self.uri}: cannot index an empty store")
        config = index_config(self.index_type, tbl.count_rows(), self._dimension(tbl))
        self._engine().create_index("vector", config=config, replace=True)
        self._table()  # the read path follows the version the index made

    def index_parameters(self, rows: int, dim: int) -> dict[str, int]:
        """The index parameters build_index uses for a table of ``rows`` × ``dim`` (the reindex
        builds with the same rule)."""
        return index_parameters(self.index_type, rows, dim)

    def index_variants(self) -> dict[str, str]:
        return {t: f"LanceDB {t}" for t in _INDEX_TYPES}

    def scratch_uri(self, directory: str, index_type: str, *,
                    refine_factor: int | None = None) -> str:
        if index_type not in _INDEX_TYPES:
            raise UsageError(f"index_type must be one of {', '.join(_INDEX_TYPES)}, "
                             f"found {index_type!r}")
        refine = "" if refine_factor is None else f"&refine_factor={refine_factor}"
        # index_threshold=1: the first write builds the index, whatever its size
        return (f"lancedb://{Path(directory) / index_type}?table=t&index_type={index_type}"
                f"&index_threshold=1{refine}")

    @guarded
    def has_index(self) -> bool:
        tbl = self._table()
        return tbl is not None and vector_index(tbl) is not None


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
