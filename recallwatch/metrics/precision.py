"""P@k: precision at a cut-off."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking


def precision(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    assert m.cutoff is not None  # guaranteed by Family.cutoff == "required"
    return r.count(m.rel, m.cutoff) / m.cutoff


P = register(
    Family(
        name="P",
        title="Precision at k",
        definition="Relevant documents in the top k, divided by k. A ranking shorter than k "
        "still divides by k.",
        cutoff="required",
        params=(REL,),
        trec_eval="`P.k` (`P_k`)",
        kernel=precision,
    )
)
