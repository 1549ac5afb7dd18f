"""Judged@k: the share of the top k that has a judgment at all."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide


def judged(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    assert r.other is not None  # Family.needs == "judged"
    depth = r.num_ret if m.cutoff is None else np.minimum(r.num_ret, m.cutoff)
    top = r.count(1, m.cutoff)
    qidx = r.other.qidx if m.cutoff is None else r.other.qidx[r.other.rank <= m.cutoff]
    return safe_divide(top + r.per_query(qidx), depth)


JUDGED = register(
    Family(
        name="Judged",
        title="Judged share of the top k",
        definition="Documents of the top k that appear in the judgments (with any grade, "
        "negative ones included), divided by k, or by the number retrieved when fewer. Without "
        "`@k`, over everything retrieved. A low value warns that the other measures count many "
        "unjudged documents as non-relevant. 0 for a query absent from the run.",
        cutoff="optional",
        params=(),
        trec_eval="none (ir_measures' `Judged@k`; trec_eval's `unj.k` counts the opposite "
        "share, and with a grade below 0 as unjudged). ir_measures breaks score ties by "
        "ascending document id; recallwatch, as trec_eval, by descending id.",
        kernel=judged,
        needs="judged",
    )
)
