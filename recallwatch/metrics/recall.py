"""R@k (recall, trec_eval's denominator |rel|) and Rcap@k (capped recall, min(|rel|, k))."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide


def recall(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return safe_divide(r.count(m.rel, m.cutoff), r.num_rel(m.rel))


def capped_recall(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    assert m.cutoff is not None  # guaranteed by Family.cutoff == "required"
    return safe_divide(r.count(m.rel, m.cutoff), np.minimum(r.num_rel(m.rel), m.cutoff))


R = register(
    Family(
        name="R",
        title="Recall at k",
        definition="Relevant documents in the top k, divided by |rel|, the number of judged "
        "relevant documents of the query (retrieved or not). 0 when |rel| = 0.",
        cutoff="required",
        params=(REL,),
        trec_eval="`recall.k` (`recall_k`)",
        kernel=recall,
    )
)

RCAP = register(
    Family(
        name="Rcap",
        title="Capped recall at k",
        definition="Relevant documents in the top k, divided by min(|rel|, k), so a perfect "
        "top k scores 1 even when a query has more than k relevant documents. It differs from "
        "trec_eval's recall (`R@k`) on purpose, and is trec_eval's relative precision: "
        "precision at k while k <= |rel|, recall at k beyond. 0 when |rel| = 0.",
        cutoff="required",
        params=(REL,),
        trec_eval="`relative_P.k` (`relative_P_k`); not `recall.k`, which divides by |rel|",
        kernel=capped_recall,
    )
)
