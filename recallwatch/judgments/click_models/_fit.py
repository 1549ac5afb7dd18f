"""What fitting a click model returns, and the pieces the fits share: the intervals the models
report per pair, a rate with Beta pseudo-counts, a Bernoulli log-likelihood."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recallwatch.judgments.click_models._counts import Array, ClickCounts
from recallwatch.stats import wilson_interval

__all__ = ["ClickModelFit", "bernoulli_log_likelihood", "examination_interval", "rate",
           "wilson_interval"]


@dataclass(frozen=True)
class ClickModelFit:
    """A fitted click model: one relevance estimate (0–1) per (query, document) pair.

    ``effective_n`` is how many times the pair was looked at, by the model's own reckoning
    (impressions for DCTR; for PBM and UBM the expected examinations Σ n γ from the fitted
    examination probabilities; see docs/online.md); ``ci_low``/``ci_high`` bound the relevance
    at ``level``.
    """

    model: str
    counts: ClickCounts
    relevance: Array  # float64[P]
    effective_n: Array  # float64[P]
    ci_low: Array  # float64[P]
    ci_high: Array  # float64[P]
    level: float
    iterations: int
    converged: bool
    seconds: float
    log_likelihood: float | None
    log_likelihood_trace: list[float] = field(default_factory=list)
    position_bias: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The model-level figures (no per-pair arrays), JSON-ready."""
        return {
            "model": self.model,
            "impressions": self.counts.n_impressions,
            "pairs": self.counts.n_pairs,
            "iterations": self.iterations,
            "converged": self.converged,
            "fit_seconds": round(self.seconds, 4),
            "log_likelihood": self.log_likelihood,
            "position_bias": self.position_bias,
            # per-pair arrays (the DBN's attractiveness and satisfaction) stay out of the summary
            "parameters": {k: v for k, v in self.parameters.items()
                           if not isinstance(v, np.ndarray)},
            "interval": {"level": self.level, "method": _INTERVALS[self.model]},
        }


_INTERVALS = {
    "dctr": "Wilson interval of clicks over impressions",
    "pbm": "score interval of the clicks over the expected examinations, each impression a "
           "trial with click probability relevance x examination (examination probabilities "
           "taken as known; Wilson's interval when every examination probability is 1)",
    "ubm": "score interval of the clicks over the expected examinations, each impression a "
           "trial with click probability relevance x examination (examination probabilities "
           "taken as known; Wilson's interval when every examination probability is 1)",
    "cm": "Wilson interval of first clicks over examinations (at or above the first click)",
    "dbn": "product of the Wilson intervals of attractiveness and satisfaction, each at "
           "1 - (1 - level) / 2 (Bonferroni: joint coverage at least level), with the expected "
           "examinations and the clicks that could show satisfaction as trials",
    "sdbn": "product of the Wilson intervals of attractiveness and satisfaction, each at "
            "1 - (1 - level) / 2 (Bonferroni: joint coverage at least level)",
}


def examination_interval(relevance: Array, looks: Array, looks_sq: Array, level: float
                         ) -> tuple[Array, Array]:
    """Score interval of the relevance α of a pair whose impressions were each looked at with a
    known probability γ: ``looks`` = Σ γ (the expected examinations), ``looks_sq`` = Σ γ².

    The clicks have mean α Σ γ and variance Σ α γ (1 − α γ); the interval holds every α whose
    expected clicks lie within z standard deviations of the fitted ones (α̂ Σ γ), which is a
    quadratic in α, solved in closed form. With every γ = 1 it is Wilson's interval of α̂ n
    clicks in n trials. Unlike Wilson's interval on an "equivalent" count derived from the Fisher
    information, it keeps its width as α̂ nears 1 (the information in a click does not vanish
    there). Where nothing was looked at it is [0, 1]."""
    from scipy.special import ndtri

    a = np.clip(np.asarray(relevance, dtype=np.float64), 0.0, 1.0)
    s1 = np.asarray(looks, dtype=np.float64)
    s2 = np.asarray(looks_sq, dtype=np.float64)
    z2 = float(ndtri(1.0 - (1.0 - level) / 2.0)) ** 2
    # (α̂ s1 − α s1)² ≤ z² (α s1 − α² s2)  ⇔  A α² − B α + C ≤ 0
    quad = s1 * s1 + z2 * s2
    lin = 2.0 * a * s1 * s1 + z2 * s1
    const = (a * s1) ** 2
    empty = s1 <= 0.0
    safe = np.where(empty, 1.0, quad)
    # the quadratic is <= 0 at α̂ (as s2 <= s1 and α̂ <= 1): two real roots around it
    root = np.sqrt(np.maximum(lin * lin - 4.0 * quad * const, 0.0))
    low = np.where(empty, 0.0, np.clip((lin - root) / (2.0 * safe), 0.0, 1.0))
    high = np.where(empty, 1.0, np.clip((lin + root) / (2.0 * safe), 0.0, 1.0))
    return np.minimum(low, a), np.maximum(high, a)


def rate(successes: Array, trials: Array, prior: tuple[float, float] | None) -> Array:
    """The share ``k / n`` with Beta pseudo-counts ``prior`` = (a0, b0) added:
    ``(k + a0) / (n + a0 + b0)``, and 0 where there is nothing to count."""
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    a0, b0 = prior if prior is not None else (0.0, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: Array = np.where(n + a0 + b0 > 0, (k + a0) / (n + a0 + b0), 0.0)
    return out


def bernoulli_log_likelihood(p: Array, successes: Array, trials: Array, *,
                             eps: float = 1e-12) -> float:
    """The log-likelihood of ``successes`` in ``trials`` at probabilities ``p`` (kept within
    ``eps`` of 0 and 1, so a share of 0 or 1 costs a large finite amount, not infinity)."""
    q = np.clip(p, eps, 1.0 - eps)
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    return float((k * np.log(q) + (n - k) * np.log1p(-q)).sum())
