"""UBM, the user browsing model (Dupret & Piwowarski 2008), a cascade-style model:
P(click) = α[query, doc] · γ[rank, rank of the previous click].

Like PBM, but whether a result is looked at depends also on how far above it the user last
clicked (0 when nothing above was clicked): a user who just clicked at rank 3 is likelier to look
at rank 4 than one who has not clicked since rank 1. Fitted by EM (see ``_em``); γ[1, 0] = 1.
"""

from __future__ import annotations

import numpy as np

from recallwatch.judgments.click_models._counts import ClickCounts
from recallwatch.judgments.click_models._em import fit_examination_model
from recallwatch.judgments.click_models._fit import ClickModelFit, examination_interval

__all__ = ["fit"]


def fit(counts: ClickCounts, *, level: float = 0.95, max_iter: int = 1000,
        tol: float = 1e-4, prior: tuple[float, float] | None = None) -> ClickModelFit:
    """Fit UBM by EM on the (pair, rank, previous-click rank) cells."""
    slot = counts.cell_rank * (counts.cell_rank - 1) // 2 + counts.cell_prev
    r = counts.max_rank
    n_contexts = r * (r + 1) // 2
    em = fit_examination_model(counts.cell_pair, slot, counts.cell_n, counts.cell_c,
                               n_pairs=counts.n_pairs, n_contexts=n_contexts,
                               max_iter=max_iter, tol=tol, prior=prior)
    low, high = examination_interval(em.alpha, em.examinations, em.examinations_sq, level)
    seen = np.bincount(slot, weights=counts.cell_n, minlength=n_contexts) > 0
    table = [
        {"rank": int(rk), "previous_click": int(prev), "examination": round(float(em.gamma[s]), 6)}
        for s, rk, prev in _contexts(r) if seen[s]
    ]
    return ClickModelFit(
        model="ubm", counts=counts, relevance=em.alpha, effective_n=em.examinations,
        ci_low=low, ci_high=high, level=level, iterations=em.iterations,
        converged=em.converged, seconds=em.seconds,
        log_likelihood=em.log_likelihood_trace[-1], log_likelihood_trace=em.log_likelihood_trace,
        position_bias={"examination_by_rank_and_previous_click": table},
        parameters={"max_iter": max_iter, "tol": tol,
                    "prior": None if prior is None else list(prior)},
    )


def _contexts(max_rank: int) -> list[tuple[int, int, int]]:
    return [(rk * (rk - 1) // 2 + prev, rk, prev)
            for rk in range(1, max_rank + 1) for prev in range(rk)]
