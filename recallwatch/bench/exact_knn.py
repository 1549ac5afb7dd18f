"""Exact ground truth (faiss flat search in query blocks, cached by content hash) and ANN recall.

ANN recall is overlap with the exact top-k, a different notion from the rank metrics of
:mod:`recallwatch.metrics` (which judge against labelled relevance); it gets its own vectorised
kernels here. Two versions are reported side by side:

- **id recall**: ``|found[:k] ∩ exact[:k]| / k``;
- **tie-aware recall** (as big-ann-benchmarks): a found item counts when its exact distance is
  within ``1e-6`` of the k-th exact distance, so an index is not penalised for returning one of
  several equidistant items the brute force happened to order differently.

Distances follow the ANN-Benchmarks convention: euclidean for ``l2``, ``1 - cos`` for
``cosine``, ``-dot`` for ``ip``; smaller is closer.

Equal scores are ordered by id, smaller first, and the top-k holds the smallest ids among the items
tied at the k-th place. faiss alone breaks inner-product ties in no fixed order; with this rule the
truth is one well-defined answer, and a search split over shards of the base (the Ray engine)
merges to exactly the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recallwatch._files import atomic_path
from recallwatch._progress import progress
from recallwatch.errors import InputError, NotInstalledError
from recallwatch.formats.ann import Metric
from recallwatch.vectors import normalise

__all__ = [
    "TIE_EPSILON",
    "GroundTruth",
    "check_inputs",
    "content_hash",
    "exact_distances",
    "exact_scores",
    "ground_truth",
    "id_recall",
    "merge_topk",
    "prepare",
    "read_cached",
    "scores_to_distances",
    "tie_aware_recall",
    "truth_key",
    "write_cached",
]

TIE_EPSILON = 1e-6
_GATHER_FLOATS = 1 << 22  # rows × k × d floats gathered at once when recomputing distances
# faiss multiplies a block of queries by the base with BLAS only when queries × dimensions reach
# its distance_compute_blas_threshold (128,000 in faiss 1.15: 1,000 queries at d = 128); a smaller
# block goes through a loop 10-20 times slower. Every inner-product (and cosine) block of at least
# this many queries takes the BLAS path here, whatever its dimension. Not l2: faiss's BLAS path
# computes it as |x|² + |y|² - 2x·y, which can swap two neighbours at nearly the same distance.
BLAS_QUERIES = 20
_FAISS_SETTINGS = threading.Lock()


@dataclass(frozen=True)
class GroundTruth:
    """Exact top-k per query: ids (int64) and distances (float32, ascending)."""

    ids: np.ndarray
    distances: np.ndarray
    metric: Metric
    k: int
    hash: str  # the content hash it is cached under ("" when computed without a cache)



def _faiss() -> object:
    try:
        import faiss
    except ImportError as exc:
        raise NotInstalledError("faiss (exact ground truth)", "bench") from exc
    return faiss


def prepare(x: np.ndarray, metric: Metric) -> np.ndarray:
    """Contiguous float32 rows; normalised for cosine, which is then searched as inner product."""
    if metric == "cosine":
        return normalise(x)
    return np.ascontiguousarray(x, dtype=np.float32)


def content_hash(*arrays: np.ndarray, extra: str = "") -> str:
    """sha256 over the arrays' dtype, shape and bytes, plus ``extra`` (e.g. metric and k)."""
    h = hashlib.sha256()
    for arr in arrays:
        a = np.ascontiguousarray(arr)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        # hash in slices so a memory-mapped file is never copied whole
        flat = a.reshape(-1).view(np.uint8)
        step = 1 << 26
        for start in range(0, flat.size, step):
            h.update(flat[start:start + step].data)
    h.update(extra.encode())
    return h.hexdigest()


def check_inputs(base: np.ndarray, queries: np.ndarray, k: int) -> None:
    """InputError unless base and queries are 2-D of one dimension and 1 ≤ k ≤ base rows."""
    if base.ndim != 2 or queries.ndim != 2:
        raise InputError(field="vectors", expected="2-D matrices",
                         found=f"<base {base.shape}, queries {queries.shape}>")
    if base.shape[1] != queries.shape[1]:
        raise InputError(field="queries", expected=f"dimension {base.shape[1]} (as the base)",
                         found=queries.shape[1])
    if not 1 <= k <= base.shape[0]:
        raise InputError(field="k", expected=f"1 ≤ k ≤ {base.shape[0]} (the base size)", found=k)


def scores_to_distances(scores: np.ndarray, metric: Metric) -> np.ndarray:
    """faiss scores (squared L2, or inner product) in the ANN-Benchmarks distance convention."""
    if metric == "l2":
        return np.asarray(np.sqrt(np.maximum(scores, 0.0)))
    if metric == "cosine":
        return 1.0 - scores
    return -scores


def truth_key(base: np.ndarray, queries: np.ndarray, k: int, metric: Metric) -> str:
    """The sha256 the exact top-``k`` of ``queries`` in ``base`` is cached under (``scores=2``:
    the scores computed again from the vectors, not a cache of faiss's own from before)."""
    return content_hash(base, queries, extra=f"metric={metric};k={k};scores=2")


def _cache_file(cache_dir: str | os.PathLike[str], key: str) -> Path:
    return Path(cache_dir) / f"truth-{key[:40]}.npz"


def read_cached(cache_dir: str | os.PathLike[str], key: str, metric: Metric,
                k: int) -> GroundTruth | None:
    """The ground truth cached under ``key`` in ``cache_dir``, or None."""
    cache = _cache_file(cache_dir, key)
    if not cache.is_file():
        return None
    with np.load(cache) as stored:
        return GroundTruth(stored["ids"], stored["distances"], metric, k, key)


def write_cached(cache_dir: str | os.PathLike[str], truth: GroundTruth) -> None:
    """Cache ``truth`` under its hash (written whole or not at all)."""
    with atomic_path(_cache_file(cache_dir, truth.hash)) as tmp, tmp.open("wb") as f:
        np.savez(f, ids=truth.ids, distances=truth.distances)


def ground_truth(
    base: np.ndarray,
    queries: np.ndarray,
    k: int,
    metric: Metric = "ip",
    *,
    block: int = 4096,
    cache_dir: str | os.PathLike[str] | None = None,
    threads: int | None = None,
) -> GroundTruth:
    """Exact top-k of every query by faiss flat search, ``block`` queries at a time, on
    ``threads`` faiss threads (default: faiss's own setting; restored afterwards).

    Memory beyond the inputs is the block's results plus faiss's own tiles; the base is not
    copied except to normalise it for cosine. With ``cache_dir``, the answer is stored under the
    sha256 of (base, queries, metric, k) and reused when the same inputs come back. The Ray
    engine computes the same bytes in shards of the base
    (:func:`recallwatch.scale.ray_engine.ground_truth`).
    """
    check_inputs(base, queries, k)
    # hashing reads every byte, so it is only paid for when there is a cache to look up
    key = "" if cache_dir is None else truth_key(base, queries, k, metric)
    if cache_dir is not None:
        cached = read_cached(cache_dir, key, metric, k)
        if cached is not None:
            return cached
    faiss = _faiss()
    before = faiss.omp_get_max_threads()  # type: ignore[attr-defined]
    if threads is not None:
        faiss.omp_set_num_threads(threads)  # type: ignore[attr-defined]
    try:
        ids, dist = _search(base, queries, k, metric, block)
    finally:
        faiss.omp_set_num_threads(before)  # type: ignore[attr-defined]
    truth = GroundTruth(ids, dist, metric, k, key)
    if cache_dir is not None:
        write_cached(cache_dir, truth)
    return truth


def _search(base: np.ndarray, queries: np.ndarray, k: int, metric: Metric,
            block: int) -> tuple[np.ndarray, np.ndarray]:
    xb = prepare(base, metric)
    ids = np.empty((queries.shape[0], k), dtype=np.int64)
    dist = np.empty((queries.shape[0], k), dtype=np.float32)
    n = queries.shape[0]
    with progress(n, f"exact nearest neighbours of {n:,} queries in {len(xb):,} vectors"
                  ) as advance:
        for start in range(0, n, block):
            scores, found = exact_scores(xb, queries[start:start + block], k, metric)
            ids[start:start + len(found)] = found
            dist[start:start + len(found)] = scores_to_distances(scores, metric)
            advance(len(found))
    return ids, dist


def exact_scores(
    xb: np.ndarray, queries: np.ndarray, k: int, metric: Metric
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` of one block of queries against the prepared base ``xb``: scores (squared
    L2, or inner product) and ids, ties ordered by id as the module docstring says.

    faiss finds the candidates; their scores are then computed again in float64 from the vectors
    and rounded to float32 (:func:`_rescored`), and the top ``k`` are taken by those. faiss's own
    float32 scores depend on how its matrix product was cut and on the CPU (an AMD EPYC gives
    other last bits for a base cut in shards, on another thread count, or at another memory
    address); the scores computed again depend on the two vectors alone, so a search split
    over shards (the Ray engine) merges to the same bytes as one search. faiss is searched deep
    enough that no item of the exact top-k can be missing: a row is searched again, twice as
    deep, while the last candidate's faiss score is within twice faiss's possible error of the
    k-th's. From 20 queries on, an inner-product or cosine block takes faiss's fast (BLAS) path
    whatever the dimension.
    """
    faiss = _faiss()
    fmetric = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT  # type: ignore[attr-defined]
    xq = prepare(queries, metric)
    n = xb.shape[0]
    slack = 2 * _faiss_error(xb, xq)
    settings = faiss.cvar  # type: ignore[attr-defined]
    # faiss's threshold is one global of the process: held while it is lowered and while any
    # search reads it, so that a search in another thread (an l2 one above all) never sees
    # another's setting
    with _FAISS_SETTINGS:
        before = settings.distance_compute_blas_threshold
        if metric != "l2":
            settings.distance_compute_blas_threshold = min(before, BLAS_QUERIES * xq.shape[1])
        try:
            depth = min(k + max(8, k // 4), n)
            scores, found = faiss.knn(xq, xb, depth, metric=fmetric)  # type: ignore[attr-defined]
            rows = np.arange(xq.shape[0])
            while depth < n:
                gap = scores[rows, depth - 1] - scores[rows, k - 1]
                rows = rows[(gap if metric == "l2" else -gap) <= slack[rows]]
                if not len(rows):
                    break
                # an item of these rows' top k may lie deeper: search them again, deeper
                depth = min(2 * depth, n)
                more, deeper = faiss.knn(xq[rows], xb, depth, metric=fmetric)  # type: ignore[attr-defined]
                width = depth - scores.shape[1]
                scores = np.pad(scores, ((0, 0), (0, width)),
                                constant_values=np.inf if metric == "l2" else -np.inf)
                found = np.pad(found, ((0, 0), (0, width)), constant_values=-1)
                scores[rows], found[rows] = more, deeper
        finally:
            settings.distance_compute_blas_threshold = before
    return _canonical(_rescored(xb, xq, found, metric), found, k, metric)


def _faiss_error(xb: np.ndarray, xq: np.ndarray) -> np.ndarray:
    """Per query, a bound on how far a float32 score of faiss (a dot product, or a squared
    distance as |x|² + |y|² - 2x·y) can be from the exact one: d × 2⁻²³ × (|q| + max |b|)²."""
    if xb.shape[0] == 0:
        return np.zeros(xq.shape[0])
    longest = float(np.sqrt(max(float(np.einsum("ij,ij->i", xb[i:i + 65536], xb[i:i + 65536],
                                                  dtype=np.float64).max())
                                for i in range(0, xb.shape[0], 65536))))
    norms = np.sqrt(np.einsum("ij,ij->i", xq, xq, dtype=np.float64))
    bound: np.ndarray = xq.shape[1] * 2.0 ** -23 * (norms + longest) ** 2
    return bound


def _rescored(xb: np.ndarray, xq: np.ndarray, found: np.ndarray, metric: Metric) -> np.ndarray:
    """The score of query row i against ``xb[found[i, j]]``, in float64 rounded to float32."""
    out = np.zeros(found.shape, dtype=np.float32)
    rows = max(1, _GATHER_FLOATS // 2 // (max(found.shape[1], 1) * xb.shape[1]))
    for start in range(0, found.shape[0], rows):
        ids = found[start:start + rows]
        vecs = xb[np.where(ids >= 0, ids, 0)].astype(np.float64)  # (b, depth, d)
        q = xq[start:start + rows, None, :].astype(np.float64)
        if metric == "l2":
            vecs -= q
            vecs *= vecs
        else:
            vecs *= q
        out[start:start + rows] = vecs.sum(axis=2)
    return out


def merge_topk(
    parts: list[tuple[np.ndarray, np.ndarray]], k: int, metric: Metric
) -> tuple[np.ndarray, np.ndarray]:
    """The top-``k`` of several (scores, ids) answers for the same queries over disjoint parts of
    the base, each from :func:`exact_scores` (ids already global): the same answer as one search
    over the whole base."""
    scores = np.concatenate([s for s, _ in parts], axis=1)
    ids = np.concatenate([i for _, i in parts], axis=1)
    return _canonical(scores, ids, k, metric)


def _canonical(
    scores: np.ndarray, ids: np.ndarray, k: int, metric: Metric
) -> tuple[np.ndarray, np.ndarray]:
    """First ``k`` per row by (score, best first; then id, smallest first); -1 padding last."""
    missing = ids < 0
    key = np.where(missing, np.inf, scores if metric == "l2" else -scores.astype(np.float64))
    tiebreak = np.where(missing, np.iinfo(np.int64).max, ids)
    order = np.lexsort((tiebreak, key), axis=1)[:, :k]
    out_ids = np.take_along_axis(ids, order, axis=1)
    out_scores = np.take_along_axis(scores, order, axis=1)
    if out_ids.shape[1] < k:  # fewer candidates than k: pad as faiss does
        pad = k - out_ids.shape[1]
        fill = np.inf if metric == "l2" else -np.inf
        out_ids = np.pad(out_ids, ((0, 0), (0, pad)), constant_values=-1)
        out_scores = np.pad(out_scores, ((0, 0), (0, pad)), constant_values=fill)
    return out_scores.astype(np.float32), out_ids.astype(np.int64)


def _valid_unique(found: np.ndarray) -> np.ndarray:
    """Mask of entries that are real ids (not -1 padding) and not a repeat within their row."""
    order = np.argsort(found, axis=1, kind="stable")
    srt = np.take_along_axis(found, order, axis=1)
    first = np.ones_like(srt, dtype=bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    mask = np.empty_like(first)
    np.put_along_axis(mask, order, first, axis=1)
    return mask & (found >= 0)


def id_recall(found: np.ndarray, truth: np.ndarray, k: int) -> np.ndarray:
    """Per query, ``|found[:k] ∩ truth[:k]| / k`` (fewer than k true neighbours: their count)."""
    found = np.asarray(found, dtype=np.int64)[:, :k]
    truth = np.asarray(truth, dtype=np.int64)[:, :k]
    if found.shape[0] != truth.shape[0]:
        raise InputError(field="found", expected=f"{truth.shape[0]} query rows",
                         found=found.shape[0])
    rows = np.arange(found.shape[0], dtype=np.int64)[:, None]
    width = int(max(found.max(initial=0), truth.max(initial=0))) + 1
    # one integer key per (query, id), so a single isin compares every row at once
    keys_found = np.where(_valid_unique(found), rows * width + found, -1)
    keys_truth = np.where(truth >= 0, rows * width + truth, -2)
    hits = np.isin(keys_found, keys_truth).sum(axis=1)
    denom = np.maximum((truth >= 0).sum(axis=1), 1)
    return np.asarray(hits / denom, dtype=np.float64)


def exact_distances(
    base: np.ndarray, queries: np.ndarray, ids: np.ndarray, metric: Metric
) -> np.ndarray:
    """Distance from query row i to ``base[ids[i, j]]``, in the convention above; ``inf`` for -1.

    ``base`` and ``queries`` must already be :func:`prepare`-d for the metric.
    """
    ids = np.asarray(ids, dtype=np.int64)
    out = np.full(ids.shape, np.inf, dtype=np.float32)
    width = max(ids.shape[1], 1) * base.shape[1]
    rows = max(1, _GATHER_FLOATS // width)
    for start in range(0, ids.shape[0], rows):
        block = ids[start:start + rows]
        valid = block >= 0
        vecs = base[np.where(valid, block, 0)]  # (b, k, d)
        q = queries[start:start + rows, None, :]
        if metric == "l2":
            d = np.sqrt(np.maximum(((vecs - q) ** 2).sum(axis=2), 0.0))
        else:
            d = scores_to_distances(np.einsum("bkd,bod->bk", vecs, q), metric)
        out[start:start + rows] = np.where(valid, d, np.inf)
    return out


def tie_aware_recall(
    found: np.ndarray,
    truth: GroundTruth,
    base: np.ndarray,
    queries: np.ndarray,
    k: int,
    *,
    epsilon: float = TIE_EPSILON,
) -> np.ndarray:
    """Per query, the share of ``found[:k]`` whose exact distance is within ``epsilon`` of the
    k-th exact distance (big-ann-benchmarks' tie rule). ``base``/``queries`` are prepared."""
    if k > truth.k:
        raise InputError(field="k", expected=f"k ≤ {truth.k} (the ground truth depth)", found=k)
    found = np.asarray(found, dtype=np.int64)[:, :k]
    dist = exact_distances(base, queries, found, truth.metric)
    # the k-th distance recomputed by the same arithmetic, so float rounding cannot split a tie;
    # a true top-k id always counts, whatever the rounding
    kth = exact_distances(base, queries, truth.ids[:, k - 1:k], truth.metric)
    rows = np.arange(found.shape[0], dtype=np.int64)[:, None]
    width = int(max(found.max(initial=0), truth.ids.max(initial=0))) + 1
    in_truth = np.isin(rows * width + found, rows * width + truth.ids[:, :k])
    good = ((dist <= kth.astype(np.float64) + epsilon) | in_truth) & _valid_unique(found)
    return np.asarray(np.minimum(good.sum(axis=1), k) / k, dtype=np.float64)
