"""LanceDB on local disk, the embedded default: ``lancedb://PATH?table=NAME``.

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

The table layout is :mod:`recallwatch.stores.lancedb.table`; the URI is read by
:mod:`recallwatch.stores.lancedb.uri`; a search is :mod:`recallwatch.stores.lancedb.search`; the ANN
index (its build rule, inspection, reindex and rollback) is :mod:`recallwatch.stores.lancedb.index`,
which knows the store only through its ``IndexedTable`` protocol (no import cycle). Reads go through
pylance alone (:mod:`recallwatch.stores.lancedb.read`): ``lancedb`` is imported only to write, to
build an index, or to search one, so a gate on a store without an ANN index never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from recallwatch.errors import StoreError, UsageError
from recallwatch.stores._meta import MetaFile
from recallwatch.stores._uri import redact
from recallwatch.stores.acl import visible_sql
from recallwatch.stores.base import (
    Chunk,
    Filter,
    Hits,
    IndexState,
    IndexVersion,
    StagedIndex,
    SupportsAclFilter,
    SupportsContentHashes,
    SupportsFilteredSearch,
    SupportsIndexBuildTime,
    SupportsIndexInspection,
    SupportsIndexSize,
    SupportsIndexVariants,
    SupportsMetaUpdate,
    SupportsReindex,
    SupportsVectors,
    SupportsVectorScan,
)
from recallwatch.stores.build_timer import BuildTimer
from recallwatch.stores.checks import check_unique_ids, check_vectors, clamp_k
from recallwatch.stores.failures import engine_message, guarded, missing_location, missing_table
from recallwatch.stores.lancedb.index import (
    IndexType,
    LanceIndex,
    StagedLanceIndex,
    index_config,
    index_parameters,
    needs_index,
    restore,
    vector_index,
)
from recallwatch.stores.lancedb.open import TableHandle
from recallwatch.stores.lancedb.read import ReadTable
from recallwatch.stores.lancedb.search import (
    FILTER_STRATEGY,
    AnnParams,
    scores_by_id,
    search_table,
    vector_query,
)
from recallwatch.stores.lancedb.table import (
    batches,
    chunks_where,
    column_pairs,
    fetch_vectors,
    set_tag,
    sql_list,
    tagged_version,
    to_arrow,
    vector_shards,
    version_list,
    version_number,
    where,
)
from recallwatch.stores.lancedb.uri import (
    INDEX_TYPES,
    check_settings,
    holds_tables,
    open_arguments,
    scratch_uri,
)

if TYPE_CHECKING:
    from lancedb.table import Table as LanceTable

__all__ = ["LanceStore"]

_PRODUCTION_TAG = "production"


class LanceStore(SupportsVectors, SupportsVectorScan, SupportsAclFilter, SupportsFilteredSearch,
                 SupportsContentHashes, SupportsMetaUpdate, SupportsReindex,
                 SupportsIndexInspection, SupportsIndexSize, SupportsIndexVariants, BuildTimer,
                 SupportsIndexBuildTime):
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
        check_settings(index_type, index_threshold=index_threshold, nprobes=nprobes, ef=ef,
                       refine_factor=refine_factor)
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
                raise missing_location(self.uri, "LanceDB", self.path, holds_tables)
            self._handle = TableHandle(self.uri, self.path, table, version, self._engine_errors)
            self._meta = MetaFile(self.path / ".recallwatch" / f"{table}.meta.json")
            if not create and self._handle.table() is None:
                raise missing_table(self.uri, "table", table, self._handle.table_names())
        except self._engine_errors as exc:
            if isinstance(exc, UsageError):
                raise
            raise StoreError(f"{self.uri}: cannot open {self.path}: {engine_message(exc)}"
                             ) from None

    @classmethod
    def open(cls, uri: str, *, create: bool = False) -> LanceStore:
        args = open_arguments(uri)
        return cls(args.pop("path"), args.pop("table"), **args, create=create)

    # -- identity ------------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        return redact(self._raw_uri)

    @property
    def read_only(self) -> bool:
        return self._pinned is not None

    @property
    def pinned(self) -> int | None:
        """The version a read-only view reads, or None (the latest)."""
        return self._pinned

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
            self._handle.create(data)
        else:
            (self._engine().merge_insert("id").when_matched_update_all()
             .when_not_matched_insert_all().execute(data))
        tbl = self._table()
        assert tbl is not None  # just written
        if needs_index(tbl, self.index_threshold):
            self._timed_build(self.build_index)  # shown apart by an ingestion

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
        return search_table(tbl, self._engine, queries, k, predicate, exact, AnnParams(
            self.nprobes, self.ef, self.refine_factor))

    def filter_strategy(self) -> str:
        return FILTER_STRATEGY

    @guarded
    def query_plan(self, vector: np.ndarray, k: int = 10, *, exact: bool = False) -> str:
        """LanceDB's physical plan for the query ``search`` runs (the ANN parameters it passes,
        e.g. ``minimum_nprobes=8``, appear in it)."""
        queries = self._queries(vector)
        tbl = self._table()
        if tbl is None:
            return ""
        k = clamp_k(k, lambda: int(tbl.count_rows()))
        ann = AnnParams(self.nprobes, self.ef, self.refine_factor)
        return str(vector_query(self._engine(), queries[:1], max(k, 1), None, exact, ann)
                   .explain_plan(verbose=True))

    @guarded
    def score_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]) -> list[dict[str, float]]:
        queries = self._queries(vectors)
        if len(ids) != len(queries):
            raise StoreError(f"score_of: {len(queries)} query vectors but {len(ids)} id lists")
        wanted = list(dict.fromkeys(i for row in ids for i in row))
        return scores_by_id(queries, ids, self._fetch_vectors(wanted))

    @guarded
    def get(self, ids: Sequence[str]) -> dict[str, Chunk]:
        tbl = self._table()
        return {} if tbl is None or not ids else {c.id: c for c in chunks_where(tbl, "id", ids)}

    @guarded
    def chunks(self, *, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        tbl = self._table()
        return [] if tbl is None else chunks_where(tbl, "doc_id", doc_ids)

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
        try:
            yield from vector_shards(tbl, rows)
        except self._engine_errors as exc:  # a generator is not covered by @guarded
            raise StoreError(f"{self.uri}: scan_vectors failed: {engine_message(exc)}"
                             ) from exc

    @guarded
    def content_hashes(self) -> dict[str, str]:
        """id -> content_hash of every chunk: one narrow scan (ingestion's change detection)."""
        tbl = self._table()
        return {} if tbl is None else column_pairs(tbl, "content_hash")

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

    # -- the ANN index (see recallwatch.stores.lancedb.index) ----------------------------------
    def index_state(self) -> IndexState | None:
        return LanceIndex(self).state()

    def index_problem(self) -> str | None:
        return LanceIndex(self).problem()

    def index_centroids(self) -> np.ndarray | None:
        return LanceIndex(self).centroids()

    def index_bytes(self) -> int:
        return LanceIndex(self).size_bytes()

    @guarded
    def reindex_problem(self) -> str | None:
        return LanceIndex(self).stage_problem()

    def stage_index(self) -> StagedIndex:
        return StagedLanceIndex(LanceIndex(self))

    def restore_index(self, previous: Mapping[str, Any], current: Mapping[str, Any]) -> str:
        return restore(LanceIndex(self), previous, current)

    def close(self) -> None:
        self._handle.close()

    # -- internals -----------------------------------------------------------------------------
    def _writable(self, what: str) -> None:
        if self._pinned is not None:
            raise StoreError(f"{what}: {self.uri} is a read-only view of version {self._pinned}")

    def _engine(self) -> LanceTable:
        """The table through lancedb, at this store's version: to write, index or ANN-search."""
        return self._handle.engine()

    def _table(self, *, latest: bool = False) -> ReadTable | None:
        return self._handle.table(latest=latest)

    def _version_number(self, version: str, *, allow_zero: bool = False) -> int:
        return version_number(self.uri, version, self.versions, allow_zero=allow_zero)

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
        return {t: f"LanceDB {t}" for t in INDEX_TYPES}

    def scratch_uri(self, directory: str, index_type: str, *,
                    refine_factor: int | None = None) -> str:
        return scratch_uri(directory, index_type, refine_factor)

    @guarded
    def has_index(self) -> bool:
        tbl = self._table()
        return tbl is not None and vector_index(tbl) is not None
