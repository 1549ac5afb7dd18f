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
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from recallwatch.truth.click_models._counts import Array

__all__ = ["EMResult", "fit_examination_model"]

_EPS = 1e-12


@dataclass(frozen=True)
class EMResult:
    alpha: Array  # float64[P]
    gamma: Array  # float64[E]
    effective_n: Array  # float64[P]
    iterations: int
    converged: bool
    seconds: float
    log_likelihood_trace: list[float]


def fit_examination_model(
    pair: Array, context: Array, n: Array, c: Array, *, n_pairs: int, n_contexts: int,
    max_iter: int, tol: float,
) -> EMResult:
    """Fit α (per pair) and γ (per context, γ[0] ≡ 1) to cells (pair, context, n, c).

    Plain EM converges slowly here (α and γ trade off against each other), so its steps are
    extrapolated with SQUAREM (Varadhan & Roland 2008, scheme S3): two EM steps give a direction,
    a longer step is taken along it and followed by one more EM step, and the result is kept only
    if it has at least the likelihood of the plain double EM step, so the log-likelihood still
    never decreases. ``max_iter`` bounds the number of EM steps (three per extrapolation);
    fitting stops when no parameter moves by more than ``tol`` in an extrapolation cycle.
    """
    start = time.perf_counter()
    n = n.astype(np.float64)
    c = c.astype(np.float64)
    miss = n - c
    pair_n = np.bincount(pair, weights=n, minlength=n_pairs)
    context_n = np.bincount(context, weights=n, minlength=n_contexts)
    seen_pair = pair_n > 0
    seen_context = context_n > 0

    work = np.empty((3, n.size))  # scratch rows reused by every step: no per-step allocation

    def step(theta: Array) -> tuple[Array, float]:
        """One EM step from θ = (α, γ); also the log-likelihood at θ."""
        a, g, p = work
        np.take(theta[:n_pairs], pair, out=a)
        np.take(theta[n_pairs:], context, out=g)
        np.multiply(a, g, out=p)
        ll = _log_likelihood(p, c, miss)
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
        np.divide(np.bincount(pair, weights=a, minlength=n_pairs), pair_n,
                  out=out[:n_pairs], where=seen_pair)
        np.divide(np.bincount(context, weights=g, minlength=n_contexts), context_n,
                  out=out[n_pairs:], where=seen_context)
        out[n_pairs] = 1.0
        return out, ll

    def loglik(theta: Array) -> float:
        p = work[2]
        np.take(theta[:n_pairs], pair, out=p)
        p *= theta[n_pairs:][context]
        return _log_likelihood(p, c, miss)

    theta = np.full(n_pairs + n_contexts, 0.5)
    theta[n_pairs] = 1.0
    trace: list[float] = []
    converged = False
    evaluations = 0
    while evaluations < max_iter:
        theta1, ll = step(theta)  # ll: the log-likelihood at the start of this cycle
        trace.append(ll)
        evaluations += 1
        candidate = theta1
        if evaluations < max_iter:
            theta2, _ = step(theta1)
            evaluations += 1
            candidate = theta2
            r = theta1 - theta
            v = theta2 - theta1 - r
            v_norm = math.sqrt(float((v * v).sum()))
            if v_norm > 0.0 and evaluations < max_iter:
                s = min(-1.0, -math.sqrt(float((r * r).sum())) / v_norm)
                jump = np.clip(theta - 2.0 * s * r + s * s * v, 0.0, 1.0)
                jump[n_pairs] = 1.0
                stabilised, _ = step(jump)
                evaluations += 1
                # keep the extrapolation only if it did not lose likelihood; EM's own double
                # step never does, so the likelihood at each cycle's start never decreases
                if loglik(stabilised) >= ll:
                    candidate = stabilised
        moved = float(np.max(np.abs(candidate - theta), initial=0.0))
        theta = candidate
        if moved < tol:
            converged = True
            break
    trace.append(loglik(theta))
    alpha, gamma = theta[:n_pairs], theta[n_pairs:]
    # Fisher information of α (γ taken as known) as an equivalent number of Bernoulli trials:
    # I(α) α (1 − α) = Σ n γ (1 − α) / (1 − α γ); for DCTR (γ = 1) it is the impressions.
    a = np.clip(alpha[pair], _EPS, 1.0 - _EPS)
    g = gamma[context]
    effective = np.bincount(pair, weights=n * g * (1.0 - a) / np.maximum(1.0 - a * g, _EPS),
                            minlength=n_pairs)
    return EMResult(alpha.copy(), gamma.copy(), effective, evaluations, converged,
                    time.perf_counter() - start, trace)


def _log_likelihood(p: Array, c: Array, miss: Array) -> float:
    p = np.clip(p, _EPS, 1.0 - _EPS)
    # elementwise and sum, not np.dot: BLAS threads stall on a busy machine for no gain here
    return float((c * np.log(p)).sum() + (miss * np.log1p(-p)).sum())
