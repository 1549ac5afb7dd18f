"""The monitor's ground truth on Ray: the exact top-k of query vectors against a store's own rows,
computed outside the store, so a collection larger than one machine's memory can be checked.

The driver streams the store's (id, vector) rows in shards of ``shard_rows``
(:class:`recallwatch.stores.base.SupportsVectorScan`, or the ids then their vectors for an
adapter without a scan), with at most ``workers`` shards in flight; each Ray task scores one
shard against every query as :func:`recallwatch.scale.ray_engine.ground_truth` does, and the
driver merges the shards' top-k as they come back. Nothing holds more than a few shards.

The answer is the store's own exact search's: the same similarity
(:data:`recallwatch.stores.base.SEARCH_METRIC`), computed as the LanceDB adapter computes it
(:func:`recallwatch.vectors.cosine_scores`: float64, answered in float32), and the same tie rule
(equal scores by chunk id, smallest first). Each shard's rows are put in id order before the task
scores them, and the merge numbers the candidates' ids in their sort order, so ties fall by id
across shards too. A store whose engine computes the cosine itself (pgvector) may order two rows
whose similarities differ only in their last bits the other way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.bench.exact_knn import merge_topk
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.ann import Metric
from recallwatch.scale.ray_engine import DEFAULT_SHARD_ROWS, _concurrency, require_ray
from recallwatch.stores.base import (
    SEARCH_METRIC,
    SupportsContentHashes,
    SupportsVectors,
    SupportsVectorScan,
)

if TYPE_CHECKING:
    from recallwatch.stores.base import VectorStore

__all__ = ["RayExactSearch", "StoreTruth", "scan_rows", "store_truth"]

# an answer whose ids are chunk ids: scores (queries × width, float32) and, per query, the ids of
# its real entries (the padding, at the end of a row, has none)
_Named = tuple[np.ndarray, list[list[str]]]


@dataclass(frozen=True)
class StoreTruth:
    """Exact top-k per query: chunk ids, best first, and their similarity scores (float32,
    ``queries × k``; ``-inf`` where a query has fewer than k rows)."""

    ids: list[list[str]]
    scores: np.ndarray


def scan_rows(store: VectorStore, rows: int) -> Iterator[tuple[list[str], np.ndarray]]:
    """The store's (id, vector) rows in shards of at most ``rows``: its own scan where it has
    one; else its ids (sorted), then their vectors a shard at a time."""
    if isinstance(store, SupportsVectorScan):
        yield from store.scan_vectors(rows)
        return
    if not isinstance(store, SupportsVectors):
        raise UsageError(f"{store.uri}: the store cannot give back its vectors, so its exact "
                         "search cannot be computed elsewhere: use --engine local")
    if rows < 1:
        raise UsageError(f"rows must be at least 1, found {rows}")
    ids = (sorted(store.content_hashes()) if isinstance(store, SupportsContentHashes)
           else [c.id for c in store.chunks()])
    for start in range(0, len(ids), rows):
        part = ids[start:start + rows]
        yield part, np.asarray(store.vectors(part), dtype=np.float32)


def _merge_named(parts: list[_Named], k: int, metric: Metric) -> _Named:
    """:func:`recallwatch.bench.exact_knn.merge_topk` over answers named by chunk id: the ids are
    numbered in their sort order first, so equal scores fall by id."""
    vocab = sorted({name for _, names in parts for row in names for name in row})
    number = {name: i for i, name in enumerate(vocab)}
    numbered = []
    for scores, names in parts:
        ids = np.full(scores.shape, -1, dtype=np.int64)
        for r, row in enumerate(names):
            ids[r, :len(row)] = [number[name] for name in row]
        numbered.append((scores, ids))
    scores, merged = merge_topk(numbered, k, metric)
    rows: list[list[int]] = merged.tolist()
    return scores, [[vocab[i] for i in row if i >= 0] for row in rows]


# Scores held at once by a task: queries x shard rows, float32. The shard is normalised once per
# block of queries, so the fewer blocks the better; at 262,144 rows this is 256 queries a block.
_SCORE_BYTES = 256 << 20


def _shard_cosine_topk(shard: np.ndarray, queries: np.ndarray, k: int,
                       block: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Top-min(k, rows) of every query against one shard whose rows are in id order: cosine and
    tie rule as the stores' exact search (:mod:`recallwatch.vectors`), equal scores by position
    (so by id). ``block``: queries scored at a time (default: as many as _SCORE_BYTES holds)."""
    from recallwatch.vectors import cosine_scores, top_k_positions

    n = shard.shape[0]
    depth = min(k, n)
    step = block or max(1, _SCORE_BYTES // (4 * n))
    positions = range(n)
    scores = np.empty((len(queries), depth), dtype=np.float32)
    best = np.empty((len(queries), depth), dtype=np.int64)
    for start in range(0, len(queries), step):
        part = cosine_scores(queries[start:start + step], shard)
        for r, row in enumerate(part):
            chosen = top_k_positions(positions, row, depth)
            best[start + r] = chosen
            scores[start + r] = row[chosen]
    return scores, best


def store_truth(
    store: VectorStore, queries: np.ndarray, k: int, *, shard_rows: int = DEFAULT_SHARD_ROWS,
    workers: int | None = None, block: int | None = None,
) -> StoreTruth:
    """The exact top-k of ``queries`` among the store's rows, scored on Ray tasks, one task per
    shard of ``shard_rows`` rows (at most ``workers`` at a time; default the cluster's CPUs).
    Needs a connected Ray session (:func:`recallwatch.scale.engine_session`)."""
    if k < 1:
        raise InputError(field="k", expected="a positive integer", found=k)
    if shard_rows < 1:
        raise UsageError(f"shard_rows must be at least 1, found {shard_rows}")
    ray = require_ray()
    metric = SEARCH_METRIC
    q = np.ascontiguousarray(queries, dtype=np.float32)
    if q.ndim != 2:
        raise InputError(field="vectors", expected="a 2-D matrix of query vectors",
                         found=f"<shape {q.shape}>")
    task = ray.remote(num_cpus=1)(_shard_cosine_topk)
    limit = _concurrency(ray, workers)
    q_ref = ray.put(q)
    best: _Named = (np.empty((len(q), 0), dtype=np.float32), [[] for _ in range(len(q))])
    running: dict[Any, list[str]] = {}  # a task's answer -> its shard's ids, in the shard's order

    def absorb(done: list[Any]) -> None:
        nonlocal best
        for ref, (scores, local) in zip(done, ray.get(done), strict=True):
            ids = running.pop(ref)
            named = [[ids[i] for i in row if i >= 0] for row in local.tolist()]
            # merging is exact in any order: (score, id) is a total order
            best = _merge_named([best, (scores, named)], k, metric)

    for ids, vectors in scan_rows(store, shard_rows):
        if vectors.shape[1] != q.shape[1]:
            raise InputError(field="queries", expected=f"dimension {vectors.shape[1]} (as the "
                             "store's vectors)", found=q.shape[1])
        if len(running) >= limit:
            done, _ = ray.wait(list(running), num_returns=1)
            absorb(done)
        order = sorted(range(len(ids)), key=ids.__getitem__)  # ties within a shard by id
        shard = np.ascontiguousarray(np.asarray(vectors)[order], dtype=np.float32)
        running[task.remote(shard, q_ref, k, block)] = [ids[i] for i in order]
    while running:
        done, _ = ray.wait(list(running), num_returns=1)
        absorb(done)
    scores, names = best
    return StoreTruth(names, scores)


@dataclass(frozen=True)
class RayExactSearch:
    """The exact search of :func:`recallwatch.ops.recall.recall_vs_exact` on Ray tasks
    (``exact=RayExactSearch()``), in a connected Ray session."""

    shard_rows: int = DEFAULT_SHARD_ROWS
    workers: int | None = None

    def __call__(self, store: VectorStore, vectors: np.ndarray, k: int) -> list[list[str]]:
        return store_truth(store, vectors, k, shard_rows=self.shard_rows,
                           workers=self.workers).ids
