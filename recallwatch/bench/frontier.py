"""Pareto frontier of recall against QPS, and the answers read off it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["fastest_at", "pareto_mask"]


def pareto_mask(recall: Sequence[float] | np.ndarray, qps: Sequence[float] | np.ndarray
                ) -> np.ndarray:
    """True for the points no other point beats: none has recall ≥ and QPS ≥ with one strictly
    greater. Of identical points only the first is kept."""
    r = np.asarray(recall, dtype=np.float64)
    q = np.asarray(qps, dtype=np.float64)
    if r.shape != q.shape:
        raise ValueError(f"recall and qps differ in length: {r.shape} vs {q.shape}")
    # fastest first (then most recall, then input order): a point is on the frontier iff it
    # has strictly more recall than every point at least as fast
    order = np.lexsort((np.arange(r.size), -r, -q))
    mask = np.zeros(r.size, dtype=bool)
    best = -np.inf
    for i in order:
        if r[i] > best:
            mask[i] = True
            best = r[i]
    return mask


def fastest_at(recall: Sequence[float] | np.ndarray, qps: Sequence[float] | np.ndarray,
               target: float) -> int | None:
    """Index of the fastest point with recall ≥ ``target`` (the most recall among equally fast
    ones), or None when no point reaches it."""
    r = np.asarray(recall, dtype=np.float64)
    q = np.asarray(qps, dtype=np.float64)
    ok = np.flatnonzero(r >= target)
    if ok.size == 0:
        return None
    best = ok[np.lexsort((-r[ok], -q[ok]))[0]]
    return int(best)
