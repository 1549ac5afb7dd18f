"""RR and RR@k: reciprocal rank of the first relevant document (MRR once averaged)."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide


def reciprocal_rank(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    first = r.first_rank(m.rel)
    if m.cutoff is not None:
        first = np.where(first <= m.cutoff, first, 0.0)
    return safe_divide(np.ones_like(first), first)


RR = register(
    Family(
        name="RR",
        title="Reciprocal rank",
        definition="1 / rank of the first relevant document; 0 when none is retrieved (within "
        "the top k with `@k`). Its mean over queries is MRR.",
        cutoff="optional",
        params=(REL,),
        trec_eval="`recip_rank` (without cut-off); with `@k` as ir_measures' `RR@k`",
        kernel=reciprocal_rank,
        aliases=("MRR",),
    )
)
