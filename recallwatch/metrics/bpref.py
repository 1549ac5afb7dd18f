"""Bpref and infAP: measures built for incomplete judgments, which skip unjudged documents."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking, safe_divide
from recallwatch.metrics._segments import before, merged

_INFAP_EPSILON = 1e-5  # trec_eval's INFAP_EPSILON


def bpref(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    assert r.other is not None  # Family.needs == "judged"
    qidx, _rank, grade = merged(r)
    relevant = grade >= m.rel
    nonrel = (grade >= 0) & ~relevant
    nonrel_before = before(qidx, nonrel)[relevant].astype(np.float64)
    q = qidx[relevant]
    num_rel = r.num_rel(m.rel)
    num_nonrel = r.other.graded - num_rel  # judged with 0 <= grade < rel
    denominator = np.minimum(num_nonrel, num_rel)[q]
    share = np.divide(np.minimum(nonrel_before, num_rel[q]), denominator,
                      out=np.zeros_like(nonrel_before), where=nonrel_before > 0)
    return safe_divide(r.per_query(q, 1.0 - share), num_rel)


def inferred_ap(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    qidx, rank, grade = merged(r)
    relevant = grade >= m.rel
    nonrel = (grade >= 0) & ~relevant
    unjudged = grade < 0
    rel_before = before(qidx, relevant)[relevant].astype(np.float64)
    nonrel_before = before(qidx, nonrel)[relevant].astype(np.float64)
    unjudged_before = before(qidx, unjudged)[relevant].astype(np.float64)
    j = (rank[relevant] - 1).astype(np.float64)  # documents above, judged or not
    eps = _INFAP_EPSILON
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * (
            (rel_before + nonrel_before + unjudged_before) / j) * (
            (rel_before + eps) / (rel_before + nonrel_before + 2 * eps))
    term = np.where(j == 0, 1.0, term)
    return safe_divide(r.per_query(qidx[relevant], term), r.num_rel(m.rel))


BPREF = register(
    Family(
        name="Bpref",
        title="Binary preference",
        definition="Counts how often the ranking puts a relevant document above a judged "
        "non-relevant one, ignoring unjudged documents: for each relevant document retrieved, "
        "1 - min(n, R) / min(N, R), where n is the number of judged non-relevant documents "
        "above it (grade >= 0 and < `rel`), N all of the query's judged non-relevant documents "
        "and R = |rel| (1 when n = 0); summed, then divided by R. A grade below 0 marks a "
        "document pooled but not judged: it counts as neither. 0 when R = 0.",
        cutoff="none",
        params=(REL,),
        trec_eval="`bpref`",
        kernel=bpref,
        aliases=("BPref",),
        needs="judged",
    )
)

INFAP = register(
    Family(
        name="infAP",
        title="Inferred average precision",
        definition="Average precision estimated from a random sample of judged pool documents "
        "(a grade below 0 marks a pooled document left unjudged). For each relevant document "
        "retrieved at rank j + 1: 1 when j = 0, else 1/(j+1) + j/(j+1) * ((r + n + u) / j) * "
        "((r + e) / (r + n + 2e)), where r, n and u count the relevant, judged non-relevant and "
        "pooled-unjudged documents above it and e = 0.00001; summed and divided by |rel|. "
        "Documents never pooled (absent from the judgments) count in j only. Equal to AP when "
        "every retrieved document is judged.",
        cutoff="none",
        params=(REL,),
        trec_eval="`infAP`",
        kernel=inferred_ap,
        aliases=("infap",),
        needs="judged",
    )
)
