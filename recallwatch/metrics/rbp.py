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
        "of grade >= N counts 1. A grade of 0 or below (-1: pooled, not judged) adds nothing. "
        "The part of the ranking never judged is not estimated (no residual).\n\n"
        "**Graded values.** Moffat & Zobel (2008) define RBP with a relevance between 0 and 1 "
        "per document, so that RBP lies between 0 and 1; ir_measures defines graded RBP with "
        "the grade itself as the gain, and recallwatch follows ir_measures (a run can score "
        "above 1 when grades go above 1: divide by the largest grade for Moffat & Zobel's "
        "scale, or use `rel=N` for binary relevance). Example, p = 0.8: grades 5 at rank 2, "
        "3 at rank 4, 1 at rank 6, -1 at rank 1 give 0.2 x (5 x 0.8 + 3 x 0.8^3 + 1 x 0.8^5) "
        "= 1.172736.\n\n"
        "**Against ir_measures (trectools).** On a ranking without tied scores the values are "
        "equal (tested on generated collections and on the example above). They differ only "
        "where scores tie, and there recallwatch is right by its contract: it ranks tied "
        "documents as every measure here and trec_eval do (document id descending), while "
        "trectools gives each tied document the mean weight of the tied ranks (in the example, "
        "if the grade 5 and the -1 documents tie, 0.2 x 5 x (1 + 0.8) / 2 for the first: "
        "1.272736). Averaging is a legitimate convention (Moffat's own rbp_eval averages ties "
        "too) but not trec_eval's, and trectools applies it wrongly in two ways: a tied group "
        "runs on into the first documents of the next query when their scores are equal, so "
        "one query's value depends on another's, and a tie across the cut-off k is cut in "
        "arbitrary order (rbp_eval counts each tied document in proportion instead).",
        cutoff="optional",
        params=(PERSISTENCE, REL),
        trec_eval="`rbp` with `rbp.p=P` on 0/1 grades (trec_eval's default p is 0.9, "
        "ir_measures' and recallwatch's 0.8)",
        kernel=rank_biased_precision,
    )
)
