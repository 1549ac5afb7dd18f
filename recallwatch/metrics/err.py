"""ERR@k: expected reciprocal rank, a cascade model of a reader who stops once satisfied."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import Family, Measure, register
from recallwatch.metrics._ranking import Ranking
from recallwatch.metrics._segments import before

MAX_GRADE = 4  # gdeval's MAX_JUDGMENT: a grade of 4 satisfies with chance 15/16


def expected_reciprocal_rank(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    keep = r.grade >= 1 if m.cutoff is None else (r.grade >= 1) & (r.rank <= m.cutoff)
    qidx, rank = r.qidx[keep], r.rank[keep]
    grade = np.minimum(r.grade[keep], MAX_GRADE)
    stop_of = (np.exp2(np.arange(MAX_GRADE + 1)) - 1.0) / 2.0**MAX_GRADE  # by grade
    # the chance the reader is still looking: the product of (1 - stop) over the documents
    # above, as a sum of logarithms within each query (a non-relevant document never stops
    # them). Grades take a handful of values, so the sum is exact counts of each grade above
    # times its logarithm: a query's value does not depend on the queries before it.
    log_go_on = np.log1p(-stop_of)
    above = np.zeros(len(qidx))
    for g in range(1, MAX_GRADE + 1):
        above += before(qidx, grade == g) * log_go_on[g]
    stop = stop_of[grade]
    reach = np.exp(above)
    return r.per_query(qidx, stop * reach / rank)


ERR = register(
    Family(
        name="ERR",
        title="Expected reciprocal rank",
        definition="A reader goes down the ranking and stops at a document of grade g with "
        "chance (2^g - 1) / 16 (grades above 4 count as 4, grades <= 0 never stop them); ERR "
        "is the expected value of 1 / the rank where they stop: the sum over ranks i of "
        "chance(i) / i times the chance they did not stop above i. Within the top k with `@k`. "
        "Not normalised: a perfect ranking scores below 1 unless its first document has grade "
        "4.",
        cutoff="optional",
        params=(),
        trec_eval="none (ir_measures' `ERR@k`, computed by gdeval, with the same maximum grade "
        "4)",
        kernel=expected_reciprocal_rank,
    )
)
