"""IPrec@x (interpolated precision at a recall level) and AP11pt (their 11-point average)."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking
from recallwatch.metrics._segments import position, suffix_max

Array = np.ndarray[Any, Any]
ELEVEN_LEVELS = tuple(i / 10 for i in range(11))  # 0.0, 0.1, ..., 1.0


def _best_precision(r: Ranking, rel: int) -> tuple[Array, Array, Array]:
    """Per relevant retrieved document (grade >= rel), in rank order: its query, its position m
    among the query's relevant documents, and the best precision at the rank of the m-th or of
    any later relevant document (interpolated precision)."""
    qidx, rank = r.relevant(rel)
    m = position(qidx)
    return qidx, m, suffix_max(qidx, m / rank)


def _at_level(r: Ranking, rel: int, level: float, best: tuple[Array, Array, Array]) -> Array:
    qidx, m, interpolated = best
    target = level * r.num_rel(rel)
    # the number of relevant documents that reaches the level, rounded half up (C's lround)
    needed = np.trunc(target)
    needed += (target - needed) >= 0.5
    needed = np.maximum(needed, 1.0)
    out = np.zeros(r.n_queries, dtype=np.float64)
    hit = m == needed[qidx]
    out[qidx[hit]] = interpolated[hit]
    return out


def interpolated_precision(r: Ranking, m: Measure) -> Array:
    assert m.level is not None  # Family.cutoff == "level"
    return _at_level(r, m.rel, m.level, _best_precision(r, m.rel))


def eleven_point(r: Ranking, m: Measure) -> Array:
    best = _best_precision(r, m.rel)
    total = np.zeros(r.n_queries, dtype=np.float64)
    for level in ELEVEN_LEVELS:
        total += _at_level(r, m.rel, level, best)
    return total / len(ELEVEN_LEVELS)


IPREC = register(
    Family(
        name="IPrec",
        title="Interpolated precision at a recall level",
        definition="Written `IPrec@x` with x a recall level between 0 and 1 (not a rank "
        "cut-off). The best precision reached at any rank where recall is at least x: with "
        "c = x * |rel| rounded half up (at least 1), the largest precision at the rank of the "
        "c-th relevant document retrieved or of any later one. 0 when fewer than c relevant "
        "documents are retrieved. The points of a precision-recall curve.",
        cutoff="level",
        params=(REL,),
        trec_eval="`iprec_at_recall.x` (`iprec_at_recall_0.50` for `IPrec@0.5`) of trec_eval "
        "10, which rounds x * |rel| half up; trec_eval 9 (and pytrec_eval, which bundles it) "
        "adds 0.9 and rounds down, so some levels differ on queries with few relevant "
        "documents",
        kernel=interpolated_precision,
    )
)

AP11PT = register(
    Family(
        name="AP11pt",
        title="11-point interpolated average precision",
        definition="The mean of `IPrec@x` over the eleven recall levels 0, 0.1, 0.2, ..., 1.",
        cutoff="none",
        params=(REL,),
        trec_eval="`11pt_avg` of trec_eval 10 (see `IPrec` for trec_eval 9's rounding)",
        kernel=eleven_point,
    )
)
