"""nDCG and nDCG@k: normalised discounted cumulative gain."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import DCG, Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide


def ndcg(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return safe_divide(r.dcg(m.cutoff, m.dcg), r.ideal_dcg(m.cutoff, m.dcg))


NDCG = register(
    Family(
        name="nDCG",
        title="Normalised discounted cumulative gain",
        definition="DCG = sum over the top k of gain(grade) / log2(rank + 1), divided by the DCG "
        "of the ideal ranking: every judged document of the query sorted by grade, best first, "
        "cut at k. Gain is the grade (`dcg=log2`, trec_eval) or 2^grade - 1 (`dcg=exp-log2`); "
        "grades <= 0 gain nothing. Without `@k` the whole ranking counts. 0 when no judged "
        "document has a grade >= 1.",
        cutoff="optional",
        params=(DCG,),
        trec_eval="`ndcg` (without cut-off), `ndcg_cut.k` (with `@k`), for `dcg=log2`",
        kernel=ndcg,
        aliases=("NDCG",),
    )
)
