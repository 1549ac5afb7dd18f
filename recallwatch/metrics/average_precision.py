"""AP and AP@k: average precision (MAP once averaged)."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide


def average_precision(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return safe_divide(r.precision_sum(m.rel, m.cutoff), r.num_rel(m.rel))


AP = register(
    Family(
        name="AP",
        title="Average precision",
        definition="Sum, over the relevant documents retrieved (in the top k with `@k`), of the "
        "precision at their rank, divided by |rel| (all judged relevant documents, retrieved or "
        "not, also with `@k`). Its mean over queries is MAP.",
        cutoff="optional",
        params=(REL,),
        trec_eval="`map` (without cut-off), `map_cut.k` (with `@k`)",
        kernel=average_precision,
        aliases=("MAP",),
    )
)
