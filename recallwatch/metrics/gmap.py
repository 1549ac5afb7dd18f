"""GMAP: average precision, combined over queries by a geometric mean."""

from __future__ import annotations

from recallwatch.metrics._measure import REL, Family, register
from recallwatch.metrics.average_precision import average_precision

GMAP = register(
    Family(
        name="GMAP",
        title="Geometric mean average precision",
        definition="Per query, average precision (as `AP`). The run's figure is the geometric "
        "mean of those values, each floored at 0.00001, so a run that fails a few queries "
        "completely scores far lower than its mean suggests: it rewards consistency across "
        "queries.",
        cutoff="none",
        params=(REL,),
        trec_eval="`gm_map` (its per-query lines print log(max(AP, 0.00001)); recallwatch "
        "prints the AP itself)",
        kernel=average_precision,
        aggregate="gmean",
    )
)
