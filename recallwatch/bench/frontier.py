"""Pareto frontier of recall against QPS, and the answers read off it.

Timed in rounds, two settings are ranked by speed only when their rounds do not overlap
(:func:`speed_order`); :func:`pareto_mask_rounds` and :func:`fastest_at_rounds` read the frontier
and the fastest setting at a recall target that way, and name the settings the timings cannot
tell apart."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["fastest_at", "fastest_at_rounds", "pareto_mask", "pareto_mask_rounds", "speed_order"]


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


def speed_order(a: Sequence[float], b: Sequence[float]) -> int:
    """1 when the rounds of ``a`` are all faster than those of ``b`` (QPS: higher), -1 when all
    slower, 0 when their ranges overlap: the timings cannot tell the two apart."""
    from recallwatch.stats import rounds_separate

    if not rounds_separate(a, b):
        return 0
    return 1 if min(a) > max(b) else -1


def pareto_mask_rounds(recall: Sequence[float] | np.ndarray,
                       rounds: Sequence[Sequence[float]]) -> np.ndarray:
    """The frontier with the timings' spread: a setting is dominated when another has at least
    its recall, is not slower (faster in every round, or overlapping), and is better on one
    count (more recall, or faster in every round). Two settings whose rounds overlap are not
    ranked by speed: at equal recall both stay on the frontier."""
    r = np.asarray(recall, dtype=np.float64)
    if r.size != len(rounds):
        raise ValueError(f"recall and rounds differ in length: {r.size} vs {len(rounds)}")
    mask = np.ones(r.size, dtype=bool)
    for i in range(r.size):
        for j in range(r.size):
            if i == j or r[j] < r[i]:
                continue
            speed = speed_order(rounds[j], rounds[i])
            if speed >= 0 and (r[j] > r[i] or speed > 0):
                mask[i] = False
                break
    return mask


def fastest_at_rounds(recall: Sequence[float] | np.ndarray, rounds: Sequence[Sequence[float]],
                      target: float) -> tuple[int | None, list[int]]:
    """The fastest setting with recall ≥ ``target`` (by its median round, then the most recall),
    and the other settings reaching it whose rounds overlap with its rounds: as fast, for all
    the timings can tell."""
    r = np.asarray(recall, dtype=np.float64)
    median = np.array([float(np.median(x)) for x in rounds])
    best = fastest_at(r, median, target)
    if best is None:
        return None, []
    tied = [i for i in (int(j) for j in np.flatnonzero(r >= target))
            if i != best and speed_order(rounds[best], rounds[i]) == 0]
    return best, sorted(tied, key=lambda i: (-median[i], -r[i], i))
