"""EM for the examination hypothesis, vectorised over count cells: PBM and UBM share it.

Both models say a click happens when the user *examines* the result and finds it *attractive*,
independently: ``P(C = 1) = α[pair] · γ[e]``, where ``e`` is the examination context of the cell
(PBM: the rank; UBM: the rank and the rank of the previous click). Neither event is observed,
only clicks, so α and γ are fitted by expectation–maximisation over cells of ``n`` impressions
with ``c`` clicks. A click implies both events; for the ``n − c`` non-clicks

    E-step   P(A = 1 | C = 0) = α (1 − γ) / (1 − α γ),   P(E = 1 | C = 0) = γ (1 − α) / (1 − α γ)
    M-step   α[p] = Σ_{cells of p} (c + (n − c) P(A = 1 | C = 0)) / Σ_{cells of p} n
             γ[e] = Σ_{cells of e} (c + (n − c) P(E = 1 | C = 0)) / Σ_{cells of e} n

Only the product α·γ is identified, so the first context (rank 1, no click above) is fixed at
γ = 1: the top result is always seen, and α is the click probability of an examined result.
Every iteration is a handful of ``bincount`` calls over the cells; the log-likelihood
``Σ c log(αγ) + (n − c) log(1 − αγ)`` never decreases (a property of EM the tests check).

How often a pair was looked at is counted from the fitted examination probabilities: ``Σ n γ``
over the pair's cells, the expected number of examinations. (An earlier version turned the Fisher
information of α into an equivalent number of Bernoulli trials, ``Σ n γ (1 − α) / (1 − α γ)``:
that count vanishes as α nears 1, so the most attractive results, clicked in most of their looks,
were reported as hardly examined and left unlabelled.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from recallwatch.judgments.click_models._counts import Array
from recallwatch.judgments.click_models._squarem import squarem

__all__ = ["EMResult", "fit_examination_model"]

_EPS = 1e-12


@dataclass(frozen=True)
class EMResult:
    alpha: Array  # float64[P]
    gamma: Array  # float64[E]
    # expected examinations of each pair, Σ n γ over its cells, and Σ n γ² (for the interval)
    examinations: Array  # float64[P]
    examinations_sq: Array  # float64[P]
    iterations: int
    converged: bool
    seconds: float
    log_likelihood_trace: list[float]


def fit_examination_model(
    pair: Array, context: Array, n: Array, c: Array, *, n_pairs: int, n_contexts: int,
    max_iter: int, tol: float, prior: tuple[float, float] | None = None,
) -> EMResult:
    """Fit α (per pair) and γ (per context, γ[0] ≡ 1) to cells (pair, context, n, c).

    Plain EM converges slowly here (α and γ trade off against each other), so its steps are
    extrapolated with SQUAREM (``_squarem``); the log-likelihood still never decreases.
    ``max_iter`` bounds the number of EM steps (three per extrapolation);
    fitting stops when no parameter moves by more than ``tol`` in an extrapolation cycle.

    ``prior`` = (a0, b0) adds Beta pseudo-counts to every α: a0 pseudo-clicks and b0 pseudo-skips
    of an examined result (the M-step becomes (clicks + a0) / (examinations + a0 + b0)), so a
    pair seen a few times is pulled towards the prior mean a0 / (a0 + b0) instead of to 0 or 1;
    the objective is then the log-likelihood plus the prior's log-density (the trace reports it).
    """
    start = time.perf_counter()
    n = n.astype(np.float64)
    c = c.astype(np.float64)
    miss = n - c
    pair_n = np.bincount(pair, weights=n, minlength=n_pairs)
    context_n = np.bincount(context, weights=n, minlength=n_contexts)
    seen_context = context_n > 0
    a0, b0 = prior if prior is not None else (0.0, 0.0)
    pair_den = pair_n + a0 + b0
    seen_pair = pair_den > 0

    def log_prior(alpha: Array) -> float:
        if prior is None:
            return 0.0
        clipped = np.clip(alpha, _EPS, 1.0 - _EPS)
        return float((a0 * np.log(clipped) + b0 * np.log1p(-clipped)).sum())

    work = np.empty((3, n.size))  # scratch rows reused by every step: no per-step allocation

    def step(theta: Array) -> tuple[Array, float]:
        """One EM step from θ = (α, γ); also the log-likelihood at θ."""
        a, g, p = work
        np.take(theta[:n_pairs], pair, out=a)
        np.take(theta[n_pairs:], context, out=g)
        np.multiply(a, g, out=p)
        ll = _log_likelihood(p, c, miss) + log_prior(theta[:n_pairs])
        # (n − c) / (1 − αγ) once; then P(A | no click) = α − αγ and P(E | no click) = γ − αγ
        # over it: α (1 − γ) / (1 − αγ) and γ (1 − α) / (1 − αγ)
        a -= p
        g -= p
        np.subtract(1.0, p, out=p)
        np.maximum(p, _EPS, out=p)
        np.divide(miss, p, out=p)
        a *= p
        a += c
        g *= p
        g += c
        out = theta.copy()
        np.divide(np.bincount(pair, weights=a, minlength=n_pairs) + a0, pair_den,
                  out=out[:n_pairs], where=seen_pair)
        np.divide(np.bincount(context, weights=g, minlength=n_contexts), context_n,
                  out=out[n_pairs:], where=seen_context)
        out[n_pairs] = 1.0
        return out, ll

    def loglik(theta: Array) -> float:
        p = work[2]
        np.take(theta[:n_pairs], pair, out=p)
        p *= theta[n_pairs:][context]
        return _log_likelihood(p, c, miss) + log_prior(theta[:n_pairs])

    def project(theta: Array) -> Array:
        theta = np.clip(theta, 0.0, 1.0)
        theta[n_pairs] = 1.0
        return theta

    theta = np.full(n_pairs + n_contexts, 0.5)
    theta[n_pairs] = 1.0
    run = squarem(step, loglik, theta, max_iter=max_iter, tol=tol, project=project)
    theta, trace, evaluations, converged = run.theta, run.trace, run.evaluations, run.converged
    alpha, gamma = theta[:n_pairs], theta[n_pairs:]
    # each impression of a cell counts as γ of an examination: expected looks, whatever α is
    looks = n * gamma[context]
    examinations = np.bincount(pair, weights=looks, minlength=n_pairs)
    examinations_sq = np.bincount(pair, weights=looks * gamma[context], minlength=n_pairs)
    return EMResult(alpha.copy(), gamma.copy(), examinations, examinations_sq, evaluations,
                    converged, time.perf_counter() - start, trace)


def _log_likelihood(p: Array, c: Array, miss: Array) -> float:
    p = np.clip(p, _EPS, 1.0 - _EPS)
    # elementwise and sum, not np.dot: BLAS threads stall on a busy machine for no gain here
    return float((c * np.log(p)).sum() + (miss * np.log1p(-p)).sum())
