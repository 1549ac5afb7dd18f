"""SetP, SetR, SetF: precision, recall and F1 of everything the run returned, rank ignored."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide


def set_precision(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return safe_divide(r.count(m.rel), r.num_ret)


def set_recall(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return safe_divide(r.count(m.rel), r.num_rel(m.rel))


def set_f(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    p, rec = set_precision(r, m), set_recall(r, m)
    # trec_eval's (b + 1) P R / (b P + R) with b = 1, in its order of operations
    return safe_divide(2.0 * p * rec, p + rec)


_SET = "All the documents the run returned for the query count, whatever their rank."

SET_P = register(
    Family(
        name="SetP",
        title="Set precision",
        definition=f"Relevant documents retrieved divided by documents retrieved. {_SET} "
        "0 for a query absent from the run.",
        cutoff="none",
        params=(REL,),
        trec_eval="`set_P`",
        kernel=set_precision,
        needs="retrieved",
    )
)

SET_R = register(
    Family(
        name="SetR",
        title="Set recall",
        definition=f"Relevant documents retrieved divided by |rel|. {_SET} 0 when |rel| = 0.",
        cutoff="none",
        params=(REL,),
        trec_eval="`set_recall`",
        kernel=set_recall,
    )
)

SET_F = register(
    Family(
        name="SetF",
        title="Set F1",
        definition="The harmonic mean of `SetP` and `SetR`: 2 P R / (P + R). 0 when no relevant "
        "document is retrieved.",
        cutoff="none",
        params=(REL,),
        trec_eval="`set_F` (its default weight 1)",
        kernel=set_f,
        needs="retrieved",
    )
)
