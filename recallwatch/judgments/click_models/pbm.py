"""PBM, the position-based model: P(click) = α[query, doc] · γ[rank].

γ[rank] is the probability that a result at that rank is looked at at all (the position bias,
the same for every query); α is the probability that a looked-at result is clicked, the
relevance estimate. Fitted by EM (see ``_em``); γ[1] = 1.
"""

from __future__ import annotations

import numpy as np

from recallwatch.judgments.click_models._counts import ClickCounts
from recallwatch.judgments.click_models._em import fit_examination_model
from recallwatch.judgments.click_models._fit import ClickModelFit, examination_interval

__all__ = ["fit"]


def fit(counts: ClickCounts, *, level: float = 0.95, max_iter: int = 1000,
        tol: float = 1e-4, prior: tuple[float, float] | None = None) -> ClickModelFit:
    """Fit PBM by EM on the (pair, rank) cells (the previous-click context summed out)."""
    r = counts.max_rank
    key = counts.cell_pair * r + (counts.cell_rank - 1)
    cells, inverse = np.unique(key, return_inverse=True)
    n = np.bincount(inverse, weights=counts.cell_n)
    c = np.bincount(inverse, weights=counts.cell_c)
    em = fit_examination_model(cells // r, cells % r, n, c, n_pairs=counts.n_pairs,
                               n_contexts=r, max_iter=max_iter, tol=tol, prior=prior)
    low, high = examination_interval(em.alpha, em.examinations, em.examinations_sq, level)
    seen = np.bincount(cells % r, weights=n, minlength=r) > 0
    last = int(np.flatnonzero(seen)[-1]) + 1 if seen.any() else 0
    return ClickModelFit(
        model="pbm", counts=counts, relevance=em.alpha, effective_n=em.examinations,
        ci_low=low, ci_high=high, level=level, iterations=em.iterations,
        converged=em.converged, seconds=em.seconds,
        log_likelihood=em.log_likelihood_trace[-1], log_likelihood_trace=em.log_likelihood_trace,
        position_bias={"examination_by_rank": [round(float(g), 6) for g in em.gamma[:last]]},
        parameters={"max_iter": max_iter, "tol": tol,
                    "prior": None if prior is None else list(prior)},
    )
