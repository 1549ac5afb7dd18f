"""CM, the cascade model (Craswell et al. 2008): the user reads from the top, one result after
another, clicks the first attractive one (probability ``a``) and stops there.

So every result at or above the first click was examined and nothing below it; with no click,
everything shown was examined. The maximum-likelihood estimate is a count:

    a = first clicks / times at or above the first click (all shown when nothing was clicked)

The model allows one click per impression: clicks below the first are outside it and are left out
(``ClickCounts.clicks_after_first`` says how many; when many, ``dbn`` is the model to use). It is
the DBN with satisfaction 1 and continuation 1.
"""

from __future__ import annotations

import time

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.judgments.click_models._counts import ClickCounts
from recallwatch.judgments.click_models._fit import (
    ClickModelFit,
    bernoulli_log_likelihood,
    rate,
    wilson_interval,
)

__all__ = ["fit"]


def fit(counts: ClickCounts, *, level: float = 0.95, max_iter: int = 0,
        tol: float = 0.0, prior: tuple[float, float] | None = None) -> ClickModelFit:
    """Fit the cascade model (closed form; ``max_iter`` and ``tol`` are unused; ``prior`` adds
    Beta pseudo-counts)."""
    start = time.perf_counter()
    if counts.cm_examined is None or counts.cm_first is None:
        raise UsageError("the cascade model needs counts made by ClickCounter (these have no "
                         "first-click counts)")
    n = counts.cm_examined.astype(np.float64)
    c = counts.cm_first.astype(np.float64)
    relevance = rate(c, n, prior)
    low, high = wilson_interval(c, n, level)
    ll = bernoulli_log_likelihood(relevance, c, n)
    return ClickModelFit(
        model="cm", counts=counts, relevance=relevance, effective_n=n,
        ci_low=np.minimum(low, relevance), ci_high=np.maximum(high, relevance), level=level,
        iterations=0, converged=True, seconds=time.perf_counter() - start, log_likelihood=ll,
        log_likelihood_trace=[ll],
        parameters={"clicks_after_first_left_out": counts.clicks_after_first,
                    "prior": None if prior is None else list(prior)},
        position_bias={"note": "examination down to the first click"},
    )
