"""The simplified dynamic Bayesian network (SDBN; Chapelle & Zhang 2009, §5, with γ = 1).

DBN's user reads down the list; at each result they click when it looks attractive (probability
``a``), and after a click they are satisfied and stop with probability ``s``; an unsatisfied user
goes on with probability γ. With γ = 1 the results examined are exactly those at or above the
last click (all of them when nothing was clicked), so the maximum-likelihood estimates are counts,
no EM needed:

    a = clicks / times examined,   s = times last clicked / clicks,   relevance = a · s

(relevance is the chance that showing the result ends the search satisfied). The full DBN with
γ < 1 needs EM over every impression's click pattern, which cannot be reduced to counts; it is
not implemented. Of the cascade family, UBM is the one fitted by EM here.
"""

from __future__ import annotations

import time

import numpy as np

from recallwatch.truth.click_models._counts import ClickCounts
from recallwatch.truth.click_models._fit import ClickModelFit, wilson_interval

__all__ = ["fit"]


def fit(counts: ClickCounts, *, level: float = 0.95, max_iter: int = 0,
        tol: float = 0.0) -> ClickModelFit:
    """Fit the simplified DBN (closed form; ``max_iter`` and ``tol`` are unused)."""
    start = time.perf_counter()
    examined = counts.sdbn_examined.astype(np.float64)
    clicks = counts.clicks.astype(np.float64)
    last = counts.sdbn_last.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        attract = np.where(examined > 0, clicks / examined, 0.0)
        satisfy = np.where(clicks > 0, last / clicks, 0.0)
    each = 1.0 - (1.0 - level) / 2.0
    a_low, a_high = wilson_interval(clicks, examined, each)
    s_low, s_high = wilson_interval(last, clicks, each)
    return ClickModelFit(
        model="dbn", counts=counts, relevance=attract * satisfy, effective_n=examined,
        ci_low=a_low * s_low, ci_high=a_high * s_high, level=level, iterations=0,
        converged=True, seconds=time.perf_counter() - start,
        # its likelihood is of another observation (examination made observable): not
        # comparable with the other models', so none is reported
        log_likelihood=None,
        parameters={"gamma": 1.0},
        position_bias={"note": "examination up to the last click (γ = 1)"},
    )
