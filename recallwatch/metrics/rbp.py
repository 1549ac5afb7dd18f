"""RBP(p): rank-biased precision, a reader who goes on to the next result with chance p."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import PERSISTENCE, REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking


def rank_biased_precision(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    qidx, rank = r.relevant(m.rel, m.cutoff)
    return (1.0 - m.p) * r.per_query(qidx, np.power(m.p, rank - 1.0))


RBP = register(
    Family(
        name="RBP",
        title="Rank-biased precision",
        definition="(1 - p) times the sum, over the relevant documents retrieved (grade >= "
        "`rel`), of p^(rank - 1): the expected share of relevant documents among those a reader "
        "looks at when they go on to the next result with chance p (0.8 by default; 0.95 reads "
        "deeper). Within the top k with `@k`. Binary relevance; the part of the ranking never "
        "judged is not estimated (no residual). Equal to ir_measures' RBP on grades made 0/1 "
        "(its RBP without `rel` multiplies each term by the grade, and it averages the terms "
        "of tied documents where recallwatch orders a tie by document id, as everywhere).",
        cutoff="optional",
        params=(PERSISTENCE, REL),
        trec_eval="`rbp` with `rbp.p=P` on 0/1 grades (trec_eval's default p is 0.9, "
        "ir_measures' and recallwatch's 0.8)",
        kernel=rank_biased_precision,
    )
)
