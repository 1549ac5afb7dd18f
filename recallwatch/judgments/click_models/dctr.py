"""DCTR, the document click-through rate: relevance = clicks / impressions of the pair.

The baseline every debiased model must beat: it ignores where a result was shown, so a result
that a ranker keeps at rank 1 looks more relevant than an equally good one kept at rank 8.
"""

from __future__ import annotations

import time

import numpy as np

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
    """Fit DCTR (closed form; ``max_iter`` and ``tol`` are accepted and unused). ``prior`` adds
    Beta pseudo-counts (clicks, non-clicks) to every pair."""
    start = time.perf_counter()
    n = counts.impressions.astype(np.float64)
    c = counts.clicks.astype(np.float64)
    relevance = rate(c, n, prior)
    low, high = wilson_interval(c, n, level)
    ll = bernoulli_log_likelihood(relevance, c, n)
    return ClickModelFit(
        model="dctr", counts=counts, relevance=relevance, effective_n=n, ci_low=low,
        ci_high=high, level=level, iterations=0, converged=True,
        seconds=time.perf_counter() - start, log_likelihood=ll, log_likelihood_trace=[ll],
        parameters={"prior": None if prior is None else list(prior)},
    )
