"""Success@k (hit rate): 1 when any relevant document is in the top k."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking


def success(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return (r.count(m.rel, m.cutoff) > 0).astype(np.float64)


SUCCESS = register(
    Family(
        name="Success",
        title="Success at k (hit rate)",
        definition="1 if at least one relevant document is in the top k, else 0. Its mean over "
        "queries is the hit rate.",
        cutoff="required",
        params=(REL,),
        trec_eval="`success.k` (`success_k`)",
        kernel=success,
    )
)
