"""A LanceDB table read through pylance (``lance``) alone: every read a gate makes, without
importing ``lancedb``.

A LanceDB table on disk is a Lance dataset (``PATH/NAME.lance``). ``import lancedb`` costs 2-3 s
and about 300 MB on a shared 2-core machine (its Rust runtime, its async machinery, pandas);
``import lance`` a fraction of that, and a gate's reads (row count, version, rows by id, stored
vectors, tags, the version list, an exact search) are plain dataset calls. So
:class:`recallwatch.stores.lancedb.store.LanceStore` opens its table through :class:`ReadTable` and
turns to ``lancedb`` only to write, to build an index, or to search an ANN index (LanceDB's own
query planner, index parameters and refine step stay in charge of approximate search).

:func:`exact_candidates` is the search of a table without an ANN index (below the adapter's
``index_threshold``, the example knowledge base's case) or of an exact search: the stored vectors
are scanned once, in blocks, for all queries together, and each query keeps its ``k`` best by the
tie rule of :mod:`recallwatch.vectors`. With an ANN index, it also searches the rows written after
the index was built (:meth:`ReadTable.unindexed_fragments`): LanceDB would scan those once *per
query* (at 100,000 chunks with 10 % outside the index, 32 ms of a 37 ms query on a busy 2-core
machine); here they are scanned once for a whole batch of queries, and LanceDB searches the
index alone (``fast_search``). The adapter then scores the candidates exactly as it
scores LanceDB's hits, so both paths give the same hits, in the same order, with the same scores
(the tests compare them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from recallwatch._process import without_pandas
from recallwatch.stores.arrow import vectors_of
from recallwatch.vectors import cosine_scores, top_k_positions

if TYPE_CHECKING:
    import lance

__all__ = ["ReadTable", "exact_candidates"]

_SCAN_BLOCK = 8192  # stored vectors scored at a time: 8192 x 512 float64 is 32 MB
# What one scan holds for its queries (their best rows' vectors and a block of scores): the
# queries are cut into as many scans as this needs, so a search's memory does not grow with the
# number of queries (at k = 100 and 512 dimensions, ~490 queries per scan).
_QUERIES_BYTES = 256 * 2**20


def queries_per_scan(k: int, dim: int) -> int:
    """How many queries one scan serves within ``_QUERIES_BYTES``: per query, its best rows'
    vectors twice (kept and chosen) and its scores of one scan block (float64, twice)."""
    per_query = 2 * k * dim * 4 + 2 * _SCAN_BLOCK * 8
    return max(1, _QUERIES_BYTES // per_query)


class _IndexInfo:
    """What the adapter reads of an index, in the shape of LanceDB's ``IndexConfig``."""

    def __init__(self, ds: lance.LanceDataset, name: str, index_type: str,
                 columns: list[str]) -> None:
        self._ds, self.name, self.index_type, self.columns = ds, name, index_type, columns

    @property
    def num_unindexed_rows(self) -> int:
        """Rows written after the index was built (LanceDB's figure, from the same statistics);
        asked for only when a write decides whether to rebuild."""
        return int(self._ds.stats.index_stats(self.name).get("num_unindexed_rows", 0) or 0)


class ReadTable:
    """The part of LanceDB's ``Table`` that the adapter's reads use, over a Lance dataset."""

    def __init__(self, path: Path, version: int | None = None) -> None:
        with without_pandas():  # pyarrow.dataset's check for pandas imports it for nothing
            import lance

        self.ds: lance.LanceDataset = lance.dataset(str(path), version=version)

    def to_lance(self) -> lance.LanceDataset:
        return self.ds

    def count_rows(self, filter: str | None = None) -> int:
        return int(self.ds.count_rows(filter))

    @property
    def version(self) -> int:
        return int(self.ds.version)

    @property
    def schema(self) -> pa.Schema:
        return self.ds.schema

    @property
    def tags(self) -> Any:
        return self.ds.tags

    def list_versions(self) -> list[dict[str, Any]]:
        return [dict(v) for v in self.ds.versions()]

    def list_indices(self) -> list[_IndexInfo]:
        return [_IndexInfo(self.ds, d.name, d.index_type, list(d.field_names))
                for d in self.ds.describe_indices()]

    def unindexed_fragments(self) -> list[Any]:
        """The data fragments the vector index does not cover (rows written after it was
        built), or [] when there is no vector index."""
        covered: set[int] = set()
        indexed = False
        for d in self.ds.describe_indices():
            if "vector" in d.field_names:
                indexed = True
                for segment in d.segments:
                    covered.update(segment.fragment_ids)
        if not indexed:
            return []
        return [f for f in self.ds.get_fragments() if f.fragment_id not in covered]

    def checkout_latest(self) -> None:
        """Follow writes made since (by this process through lancedb, or by another)."""
        latest = self.ds.latest_version
        if latest != self.ds.version:
            self.ds = self.ds.checkout_version(latest)


def exact_candidates(
    table: ReadTable, queries: np.ndarray, k: int, predicate: str | None,
    fragments: list[Any] | None = None,
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Per query, in order, the ids and stored vectors of its ``k`` best rows (exact cosine,
    ties by id) among the rows matching ``predicate`` (in ``fragments``, default all): one scan
    for as many queries as ``queries_per_scan`` allows, each block's answers yielded before the
    next block is scanned."""
    step = queries_per_scan(k, queries.shape[1])
    # one str per row id across the answers (each scan reads the ids anew): an id is 50-60
    # bytes where a reference is 8, and the answers of many queries share rows
    canon: dict[str, str] = {}
    for start in range(0, len(queries), step):
        for ids, vectors in _scan(table, queries[start:start + step], k, predicate, fragments):
            yield [canon.setdefault(c, c) for c in ids], vectors


def _scan(
    table: ReadTable, queries: np.ndarray, k: int, predicate: str | None,
    fragments: list[Any] | None,
) -> list[tuple[list[str], np.ndarray]]:
    dim = queries.shape[1]
    # per query: the ids, stored vectors and scores of its best rows so far
    best: list[tuple[list[str], np.ndarray, np.ndarray]] = [
        ([], np.empty((0, dim), dtype=np.float32), np.empty(0, dtype=np.float32))
        for _ in range(len(queries))]
    scanner = table.ds.scanner(columns=["id", "vector"], filter=predicate,
                               batch_size=_SCAN_BLOCK, fragments=fragments)
    for batch in scanner.to_batches():
        if batch.num_rows == 0:
            continue
        ids = batch.column(0).to_pylist()
        stored = vectors_of(batch.column(1))
        scores = cosine_scores(queries, stored)
        for n in range(len(queries)):
            kept_ids, kept_vectors, kept_scores = best[n]
            pool_ids = kept_ids + ids
            pool_scores = np.concatenate([kept_scores, scores[n]])
            take = np.asarray(top_k_positions(pool_ids, pool_scores, k), dtype=np.int64)
            kept = take < len(kept_ids)  # gather the chosen rows only: no copy of the block
            chosen_vectors = np.empty((len(take), dim), dtype=stored.dtype)
            chosen_vectors[kept] = kept_vectors[take[kept]]
            chosen_vectors[~kept] = stored[take[~kept] - len(kept_ids)]
            best[n] = ([pool_ids[i] for i in take], chosen_vectors, pool_scores[take])
    return [(ids, vectors) for ids, vectors, _ in best]
