"""RBP(p): rank-biased precision, a reader who goes on to the next result with chance p."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import PERSISTENCE, REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking


def rank_biased_precision(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    keep = r.grade >= m.rel
    if m.cutoff is not None:
        keep &= r.rank <= m.cutoff
    rows = np.flatnonzero(keep)
    weights = np.power(m.p, r.rank[rows] - 1.0)
    if m.rel == REL.default:  # graded, as ir_measures: each term times the document's grade
        weights = weights * r.grade[rows]
    return (1.0 - m.p) * r.per_query(r.qidx[rows], weights)


RBP = register(
    Family(
        name="RBP",
        title="Rank-biased precision",
        definition="(1 - p) times the sum, over the relevant documents retrieved (grade >= 1), "
        "of p^(rank - 1) times the document's grade: the expected gain a reader collects when "
        "they go on to the next result with chance p (0.8 by default; 0.95 reads deeper). With "
        "grades 0/1 it is the expected share of relevant documents among those they look at. "
        "Within the top k with `@k`. With `rel=N` (N >= 2) relevance is binary: each document "
        "of grade >= N counts 1. The part of the ranking never judged is not estimated (no "
        "residual). Equal to ir_measures' RBP (computed by trectools), except that a tie is "
        "ordered by document id, as everywhere in recallwatch, where trectools averages the "
        "terms of tied documents.",
        cutoff="optional",
        params=(PERSISTENCE, REL),
        trec_eval="`rbp` with `rbp.p=P` on 0/1 grades (trec_eval's default p is 0.9, "
        "ir_measures' and recallwatch's 0.8)",
        kernel=rank_biased_precision,
    )
)
