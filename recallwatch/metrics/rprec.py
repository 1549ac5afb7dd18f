"""Rprec: precision at R, R = |rel| of the query."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide


def r_precision(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    num_rel = r.num_rel(m.rel)
    qidx, rank = r.relevant(m.rel)
    within = rank <= num_rel[qidx]
    return safe_divide(r.per_query(qidx[within]), num_rel)


RPREC = register(
    Family(
        name="Rprec",
        title="R-precision",
        definition="Relevant documents in the top R, divided by R, where R = |rel| is the "
        "number of judged relevant documents of the query. 0 when R = 0.",
        cutoff="none",
        params=(REL,),
        trec_eval="`Rprec`",
        kernel=r_precision,
        aliases=("RPrec",),
    )
)
