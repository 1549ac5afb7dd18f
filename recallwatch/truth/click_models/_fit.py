"""What fitting a click model returns, and the interval every model reports per pair."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recallwatch.truth.click_models._counts import Array, ClickCounts

__all__ = ["ClickModelFit", "jeffreys_interval"]


@dataclass(frozen=True)
class ClickModelFit:
    """A fitted click model: one relevance estimate (0–1) per (query, document) pair.

    ``effective_n`` is the number of examinations the estimate is worth (impressions for DCTR;
    for the position models the Fisher information turned into an equivalent count, see
    docs/online.md); ``ci_low``/``ci_high`` bound the relevance at ``level``.
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
            "parameters": self.parameters,
            "interval": {"level": self.level, "method": _INTERVALS[self.model]},
        }


_INTERVALS = {
    "dctr": "Jeffreys interval of clicks over impressions",
    "pbm": "Jeffreys interval with the effective number of examinations from the Fisher "
           "information (examination probabilities taken as known)",
    "ubm": "Jeffreys interval with the effective number of examinations from the Fisher "
           "information (examination probabilities taken as known)",
    "dbn": "product of the Jeffreys intervals of attractiveness and satisfaction, each at "
           "1 - (1 - level) / 2 (Bonferroni: joint coverage at least level)",
}


def jeffreys_interval(successes: Array, trials: Array, level: float) -> tuple[Array, Array]:
    """Two-sided Jeffreys interval (Beta(k + 1/2, n - k + 1/2) quantiles) of a proportion.

    ``successes`` may be fractional (effective counts). Where ``trials`` is 0 the interval is
    [0, 1]. As Brown, Cai & DasGupta (2001) recommend, the lower bound is 0 when k = 0 and the
    upper 1 when k = n; with fractional counts, when k rounds to 0 (to n), i.e. k < 1/2
    (k > n - 1/2), so that an estimate of almost 0 is not left below its own interval.
    """
    from scipy.special import betaincinv

    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    k = np.clip(k, 0.0, n)
    tail = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        low = betaincinv(k + 0.5, n - k + 0.5, tail)
        high = betaincinv(k + 0.5, n - k + 0.5, 1.0 - tail)
    low = np.where(k < 0.5, 0.0, low)
    high = np.where(k > n - 0.5, 1.0, high)
    empty = n <= 0.0
    return np.where(empty, 0.0, low), np.where(empty, 1.0, high)
