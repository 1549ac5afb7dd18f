"""How :class:`~recallwatch.stores.lancedb.store.LanceStore` answers a search: an exact scan on
pylance when the table has no ANN index (or an exact search is asked for), else LanceDB's ANN query
on the index plus one exact scan, per block of queries, of the rows written after the index was
built (see :mod:`recallwatch.stores.lancedb.read`). Either way every hit is scored exactly from its
stored vector (:func:`recallwatch.vectors.cosine_scores`) and ranked by the one tie rule
(:func:`recallwatch.vectors.top_k`), so both paths agree to the last bit.

A filter is LanceDB SQL applied *before* the vector search (``prefilter=True``): the ANN search
looks only at rows that pass it, so a selective filter still returns ``k`` rows when ``k`` pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from recallwatch.stores.arrow import vectors_of
from recallwatch.stores.base import Hits
from recallwatch.stores.lancedb.index import vector_index
from recallwatch.stores.lancedb.read import ReadTable, exact_candidates
from recallwatch.vectors import cosine_scores, top_k

if TYPE_CHECKING:
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table as LanceTable

__all__ = ["FILTER_STRATEGY", "AnnParams", "scores_by_id", "search_table", "vector_query"]

_QUERY_BATCH = 64  # query vectors per LanceDB search call
FILTER_STRATEGY = (
    "prefilter: LanceDB applies the filter before the vector search, so only rows that pass it "
    "are candidates and k rows come back whenever k pass (rows written after the ANN index was "
    "built are searched exactly, filter included)")


@dataclass(frozen=True)
class AnnParams:
    """The ANN query parameters a store passes to LanceDB (None: LanceDB's default)."""

    nprobes: int | None = None
    ef: int | None = None
    refine_factor: int | None = None


def vector_query(tbl: LanceTable, block: np.ndarray, k: int, predicate: str | None,
                 exact: bool, ann: AnnParams) -> LanceVectorQueryBuilder:
    """The one LanceDB query every search runs: cosine, k, the filter, the ANN parameters."""
    vq = cast("LanceVectorQueryBuilder", tbl.search(list(block), query_type="vector"))
    builder = vq.distance_type("cosine").limit(k)
    if predicate:
        builder = builder.where(predicate, prefilter=True)
    if exact:
        return builder.bypass_vector_index()
    if ann.nprobes is not None:
        builder = builder.nprobes(ann.nprobes)
    if ann.ef is not None:
        builder = builder.ef(ann.ef)
    if ann.refine_factor is not None:
        builder = builder.refine_factor(ann.refine_factor)
    return builder


def search_table(tbl: ReadTable, engine: Callable[[], LanceTable], queries: np.ndarray, k: int,
                 predicate: str | None, exact: bool, ann: AnnParams) -> list[Hits]:
    """The ``k`` best rows of each query among those matching ``predicate`` (``k`` already
    clamped to the table's rows, at least 1); ``engine`` opens the table through lancedb, asked
    only when there is an ANN index to search."""
    out: list[Hits] = []
    if exact or vector_index(tbl) is None:
        # no ANN index to ask: one scan of the stored vectors for every query, on pylance
        for row, (ids, stored) in zip(queries, exact_candidates(tbl, queries, k, predicate),
                                      strict=True):
            scores = cosine_scores(row, stored)[0] if ids else np.empty(0, dtype=np.float32)
            out.append(Hits(*top_k(ids, scores, len(ids))))
        return out
    lance_tbl = engine()
    # LanceDB searches the index alone; the rows outside it are scanned here once for every
    # query of a block (see recallwatch.stores.lancedb.read)
    outside = tbl.unindexed_fragments()
    for start in range(0, len(queries), _QUERY_BATCH):
        block = queries[start:start + _QUERY_BATCH]
        builder = vector_query(lance_tbl, block, k, predicate, exact, ann)
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


def scores_by_id(queries: np.ndarray, ids: Sequence[Sequence[str]],
                 found: Mapping[str, np.ndarray]) -> list[dict[str, float]]:
    """Per query, the cosine similarity of each of its ids that ``found`` holds a vector of."""
    out: list[dict[str, float]] = []
    for q, row_ids in zip(queries, ids, strict=True):
        present = [i for i in dict.fromkeys(row_ids) if i in found]
        if not present:
            out.append({})
            continue
        scores = cosine_scores(q, np.stack([found[i] for i in present]))[0]
        out.append({i: float(s) for i, s in zip(present, scores, strict=True)})
    return out
