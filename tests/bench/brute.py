"""Numpy brute force for the live benchmarks' tests: the store's own answers read back, and their
recall against the exact cosine top-k among given rows, computed independently of the code
under test."""

from __future__ import annotations

import numpy as np

from recallwatch.bench.datasets import Dataset
from recallwatch.stores.base import Filter, VectorStore


def answers(store: VectorStore, queries: np.ndarray, k: int,
            filter: Filter | None = None) -> np.ndarray:
    """The base rows each query's search returned (ids ``rNNNNNNNNN``), -1 padded to ``k``."""
    out = np.full((len(queries), k), -1, dtype=np.int64)
    for n, hits in enumerate(store.search(queries, k, filter=filter)):
        out[n, :len(hits.ids)] = [int(i[1:]) for i in hits.ids]
    return out


def numpy_recall(found: np.ndarray, data: Dataset, rows: np.ndarray, k: int) -> float:
    """Mean over queries of |found ∩ exact top-k among ``rows``| / min(k, len(rows))."""
    base = data.base[rows] / np.linalg.norm(data.base[rows], axis=1, keepdims=True)
    q = data.queries / np.linalg.norm(data.queries, axis=1, keepdims=True)
    order = np.argsort(-(q @ base.T), axis=1, kind="stable")[:, :k]
    truth = rows[order]
    depth = min(k, len(rows))
    return float(np.mean([len(set(f[f >= 0]) & set(t)) / depth
                          for f, t in zip(found, truth, strict=True)]))
