"""The simplified DBN (SDBN; Chapelle & Zhang 2009, §5): the DBN's counts taken at face value.

It assumes every result at or above the last click was examined and nothing below it was (every
result when nothing was clicked); then the maximum-likelihood estimates are counts, no EM needed:

    a = clicks / times examined,   s = times last clicked / clicks,   relevance = a · s

That assumption is the full DBN's only when users never read on after an unsatisfying last click.
Real (and simulated) users do: an unsatisfied user who reads on without clicking is counted as
if they had stopped, so *s* is overstated for poor results and the ranking is biased (on this
project's simulated cascade users it ranks worse than raw click-through rate; docs/online.md).
Its use: a one-pass closed form when no time for EM is available, and an exact estimate of the
cascade model's attractiveness on logs with at most one click per impression (then it equals
``cm``). Use ``dbn`` (the full model, fitted by EM) for labels.
"""

from __future__ import annotations

import time

import numpy as np

from recallwatch.judgments.click_models._counts import ClickCounts
from recallwatch.judgments.click_models._fit import ClickModelFit, rate, wilson_interval

__all__ = ["fit"]


def fit(counts: ClickCounts, *, level: float = 0.95, max_iter: int = 0,
        tol: float = 0.0, prior: tuple[float, float] | None = None) -> ClickModelFit:
    """Fit the simplified DBN (closed form; ``max_iter`` and ``tol`` are unused; ``prior`` adds
    Beta pseudo-counts to the attractiveness)."""
    start = time.perf_counter()
    examined = counts.sdbn_examined.astype(np.float64)
    clicks = counts.clicks.astype(np.float64)
    last = counts.sdbn_last.astype(np.float64)
    attract = rate(clicks, examined, prior)
    satisfy = rate(last, clicks, None)
    each = 1.0 - (1.0 - level) / 2.0
    a_low, a_high = wilson_interval(clicks, examined, each)
    s_low, s_high = wilson_interval(last, clicks, each)
    return ClickModelFit(
        model="sdbn", counts=counts, relevance=attract * satisfy, effective_n=examined,
        ci_low=np.minimum(a_low * s_low, attract * satisfy),
        ci_high=np.maximum(a_high * s_high, attract * satisfy), level=level, iterations=0,
        converged=True, seconds=time.perf_counter() - start,
        # its likelihood is of another observation (examination made observable): not
        # comparable with the other models', so none is reported
        log_likelihood=None,
        parameters={"gamma": 1.0, "prior": None if prior is None else list(prior)},
        position_bias={"note": "examination up to the last click, none below it"},
    )
