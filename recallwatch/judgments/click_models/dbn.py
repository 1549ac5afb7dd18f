"""DBN, the dynamic Bayesian network click model (Chapelle & Zhang 2009), fitted by EM.

The user reads down the list. At each result they examine, they click it if it looks attractive
(probability ``a``, per pair); after a click they are satisfied with probability ``s`` (per pair)
and stop; otherwise (no click, or an unsatisfying one) they go on to the next result with
probability ``γ`` (the *continuation*, one number for the log, estimated). The relevance of a pair
is ``a · s``: the chance that showing it to someone who looks at it ends the search satisfied.

Everything at or above the last click was examined for certain: those clicks and skips, the
clicks that were not the last (the user went on, so unsatisfied) and the moves down between them
are counts. Below the last click (from the top when nothing was clicked) the user may have been
satisfied, given up, or read on without clicking; EM weighs these by their probabilities. With
``N_j`` = P(no click from result j on | j examined) = (1 − a_j)(1 − γ + γ N_{j+1}) (N = 1 past the
end), the E-step for an impression whose last click is at l gives

    P(satisfied at l | clicks) = s_l / (s_l + (1 − s_l)(1 − γ + γ N_{l+1}))
    P(j + 1 examined | j examined, no click at j or below) = γ N_{j+1} / (1 − γ + γ N_{j+1})

and the M-step: a = clicks / expected examinations, s = expected satisfied last clicks / clicks
that could show satisfaction (a click on the last result shown cannot), γ = expected moves down /
expected chances to move down. The log-likelihood never decreases (checked in the tests). Only
the impressions' tails (``_tails``) enter the E-step, so each step costs the number of distinct
tails times the list length.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.judgments.click_models._counts import Array, ClickCounts
from recallwatch.judgments.click_models._fit import ClickModelFit, wilson_interval
from recallwatch.judgments.click_models._squarem import squarem
from recallwatch.judgments.click_models._tails import Tails

__all__ = ["fit", "objective_of"]

_EPS = 1e-12


def fit(counts: ClickCounts, *, level: float = 0.95, max_iter: int = 1000,
        tol: float = 1e-4, prior: tuple[float, float] | None = None) -> ClickModelFit:
    """Fit the DBN by EM. ``prior`` = Beta pseudo-counts added to every ``a`` (attractiveness;
    the satisfaction gets the same strength around the log's mean satisfaction)."""
    start = time.perf_counter()
    if counts.tails is None or counts.dbn_certain is None:
        raise UsageError("the DBN needs the impressions' tails: count with "
                         "ClickCounter(tails=True)")
    state = _State(counts, counts.tails, counts.dbn_certain, prior)
    p = counts.n_pairs

    def unpack(flat: Array) -> tuple[Array, Array, float]:
        return flat[:p], flat[p:2 * p], float(flat[2 * p])

    def step(flat: Array) -> tuple[Array, float]:
        (a, s, g), ll = state.step(unpack(flat))
        return np.concatenate([a, s, [g]]), ll

    def objective(flat: Array) -> float:
        return state.objective(unpack(flat))

    def project(flat: Array) -> Array:
        flat = np.clip(flat, 0.0, 1.0)
        flat[2 * p] = min(max(flat[2 * p], _EPS), 1.0 - 1e-9)
        return flat

    run = squarem(step, objective, np.full(2 * p + 1, 0.5), max_iter=max_iter, tol=tol,
                  project=project)
    theta = unpack(run.theta)
    a, s, gamma = theta
    final_ll = run.trace[-1]
    exam, s_trials = state.evidence(theta)
    each = 1.0 - (1.0 - level) / 2.0
    a_low, a_high = wilson_interval(a * exam, exam, each)
    s_low, s_high = wilson_interval(s * s_trials, s_trials, each)
    relevance = a * s
    return ClickModelFit(
        model="dbn", counts=counts, relevance=relevance, effective_n=exam,
        ci_low=np.minimum(a_low * s_low, relevance), ci_high=np.maximum(a_high * s_high, relevance),
        level=level, iterations=run.evaluations, converged=run.converged,
        seconds=time.perf_counter() - start, log_likelihood=final_ll,
        log_likelihood_trace=run.trace,
        position_bias={"continuation": round(gamma, 6)},
        parameters={"gamma": round(gamma, 6), "max_iter": max_iter, "tol": tol,
                    "prior": None if prior is None else list(prior),
                    "attractiveness": a, "satisfaction": s, "satisfaction_evidence": s_trials},
    )


def objective_of(counts: ClickCounts, theta: tuple[Array, Array, float]) -> float:
    """The DBN log-likelihood of ``counts`` at θ = (a, s, γ) (per pair of ``counts``)."""
    if counts.tails is None or counts.dbn_certain is None:
        raise UsageError("the DBN needs the impressions' tails: count with "
                         "ClickCounter(tails=True)")
    return _State(counts, counts.tails, counts.dbn_certain, None).objective(theta)


class _State:
    """The counts that never change across EM steps, and one step."""

    def __init__(self, counts: ClickCounts, tails: Tails, certain: Array,
                 prior: tuple[float, float] | None) -> None:
        self.n_pairs = counts.n_pairs
        self.rows = tails.pairs
        self.valid = self.rows >= 0
        self.safe = np.where(self.valid, self.rows, 0)
        self.clicked = tails.clicked
        self.m = tails.n.astype(np.float64)
        self.clicks = counts.clicks.astype(np.float64)
        self.certain = certain.astype(np.float64)
        self.not_last = (counts.clicks - counts.sdbn_last).astype(np.float64)
        self.continued = float(counts.dbn_continued)
        self.a0, self.b0 = prior if prior is not None else (0.0, 0.0)
        width = self.rows.shape[1]
        # the no-click columns: every column of a no-click tail, columns ≥ 1 of a clicked one
        self.skip = self.valid.copy()
        if width:
            self.skip[:, 0] &= ~self.clicked
        self.informative = self.clicked & (self.valid[:, 1] if width > 1 else False)
        self.last_pair = self.safe[:, 0].copy()
        self.valid_t = np.ascontiguousarray(self.valid.T)
        self.safe_t = np.ascontiguousarray(self.safe.T)
        self.skip_t = np.ascontiguousarray(self.skip.T)
        self.skip_pairs = self.safe_t[self.skip_t]

    def initial(self) -> tuple[Array, Array, float]:
        return np.full(self.n_pairs, 0.5), np.full(self.n_pairs, 0.5), 0.5

    def _posterior(self, theta: tuple[Array, Array, float]) -> dict[str, Any]:
        # column-major work ([W, U]): each rank's row is contiguous
        a, s, g = theta
        width, u = self.valid_t.shape
        attract = a[self.safe_t]
        attract *= self.valid_t
        big_n = np.ones((width + 1, u))
        for j in range(width - 1, -1, -1):
            row = big_n[j]
            np.multiply(big_n[j + 1], g, out=row)
            row += 1.0 - g
            row *= 1.0 - attract[j]
            row[~self.valid_t[j]] = 1.0
        stay = big_n[1:] * g
        stay += 1.0 - g  # [W, U]: stop, or go on without clicks, after column j
        s0 = s[self.last_pair]
        total = s0 + (1.0 - s0) * stay[0]  # P(no click below | click at column 0)
        safe_total = np.maximum(total, _EPS)
        exam = np.zeros((width, u))
        move_from = np.zeros((width, u))  # P(at j, not satisfied, with a result below)
        if width:
            exam[0] = 1.0
        for j in range(width - 1):
            has_next = self.valid_t[j + 1]
            go_on = g * big_n[j + 1]
            if j == 0:
                frac = np.where(self.clicked, (1.0 - s0) * go_on / safe_total,
                                go_on / np.maximum(stay[0], _EPS))
                chance = np.where(self.clicked, (1.0 - s0) * stay[0] / safe_total, 1.0)
            else:
                frac = go_on / np.maximum(stay[j], _EPS)
                chance = exam[j]
            np.multiply(exam[j], frac, out=exam[j + 1])
            exam[j + 1] *= has_next
            np.multiply(chance, has_next, out=move_from[j])
        likelihood = np.where(self.clicked, total, big_n[0])
        return {"exam": exam, "move_from": move_from, "s0": s0, "total": total,
                "likelihood": likelihood}

    def step(self, theta: tuple[Array, Array, float]) -> tuple[tuple[Array, Array, float], float]:
        """One EM step from θ = (a, s, γ); also the log-likelihood (plus log-prior) at θ."""
        a, _, g = theta
        post = self._posterior(theta)
        m = self.m
        exam, move_from = post["exam"], post["move_from"]
        expected_exam = np.bincount(self.skip_pairs, weights=(exam * m)[self.skip_t],
                                    minlength=self.n_pairs)
        info = self.informative
        sat = np.bincount(self.last_pair[info], weights=(m * post["s0"] / np.maximum(
            post["total"], _EPS))[info], minlength=self.n_pairs)
        s_trials = self.not_last + np.bincount(self.last_pair[info], weights=m[info],
                                               minlength=self.n_pairs)
        moves = float((exam[1:] @ m).sum()) if exam.shape[0] > 1 else 0.0
        chances = float((move_from @ m).sum())
        a_den = self.certain + expected_exam + self.a0 + self.b0
        new_a = np.where(a_den > 0, (self.clicks + self.a0) / np.maximum(a_den, _EPS), a)
        s_mean = float(sat.sum() / s_trials.sum()) if s_trials.sum() > 0 else 0.5
        # a pair whose satisfaction was never observable takes the log's mean satisfaction
        s_a0 = (self.a0 + self.b0) * s_mean
        s_den = s_trials + (self.a0 + self.b0)
        new_s = np.where(s_den > 0, (sat + s_a0) / np.maximum(s_den, _EPS), s_mean)
        new_g = (self.continued + moves) / (self.continued + chances) if chances > 0 else g
        new_g = min(max(new_g, _EPS), 1.0 - 1e-9)
        return (new_a, new_s, new_g), self._log_likelihood(theta, post)

    def objective(self, theta: tuple[Array, Array, float]) -> float:
        return self._log_likelihood(theta, self._posterior(theta))

    def _log_likelihood(self, theta: tuple[Array, Array, float], post: dict[str, Any]) -> float:
        a, s, g = theta
        ac = np.clip(a, _EPS, 1.0 - _EPS)
        sc = np.clip(s, _EPS, 1.0 - _EPS)
        ll = float((self.clicks * np.log(ac) + (self.certain - self.clicks) * np.log1p(-ac)).sum()
                   + (self.not_last * np.log1p(-sc)).sum()
                   + self.continued * np.log(max(g, _EPS))
                   + (self.m * np.log(np.maximum(post["likelihood"], _EPS))).sum())
        if self.a0 or self.b0:
            ll += float((self.a0 * np.log(ac) + self.b0 * np.log1p(-ac)).sum())
        return ll

    def evidence(self, theta: tuple[Array, Array, float]) -> tuple[Array, Array]:
        """Expected examinations of each pair and its clicks that could show satisfaction."""
        post = self._posterior(theta)
        m = self.m
        exam = self.certain + np.bincount(self.skip_pairs, weights=(post["exam"] * m)[self.skip_t],
                                          minlength=self.n_pairs)
        info = self.informative
        trials = self.not_last + np.bincount(self.last_pair[info], weights=m[info],
                                             minlength=self.n_pairs)
        return exam, trials
