"""Timings with their spread: quantiles of per-call latencies with distribution-free intervals,
how many calls a quantile needs, and a seeded bootstrap of the ratio of two quantiles.

A quantile's interval comes from the order statistics of the calls (no shape assumed): the 95 %
interval of the p99 is ``[x(l), x(u)]`` with ``l`` and ``u`` read from the binomial distribution of
how many calls fall below the true p99. Both ends exist only from
``ceil(log(0.025) / log(0.99)) = 368`` calls on: with fewer, the slowest call observed may still
be faster than the true p99 more than 2.5 % of the time, so no p99 is stated. The median needs 6.

The ratio of a quantile between two sets of calls (a candidate and a baseline) is bootstrapped on
log latencies: the calls of each are resampled with replacement (both with the same draws when
they were timed interleaved, call for call), and the interval and the one-sided p-value are read
from the resampled log ratios.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["Quantile", "QuantileRatio", "calls_needed", "quantile", "quantile_name",
           "quantile_ratio"]


def calls_needed(q: float, level: float = 0.95) -> int:
    """How many calls a distribution-free two-sided ``level`` interval of the ``q`` quantile
    needs (both ends an observed call): 368 for the p99, 6 for the median."""
    if not 0.0 < q < 1.0 or not 0.0 < level < 1.0:
        raise UsageError(f"quantile and level must be strictly between 0 and 1, got {q}, {level}")
    return math.ceil(math.log((1.0 - level) / 2.0) / math.log(max(q, 1.0 - q)) - 1e-9)


def quantile_name(q: float) -> str:
    """``p99``, ``p50``, ``p95``…"""
    return f"p{100 * q:g}"


@dataclass(frozen=True)
class Quantile:
    """A quantile of per-call timings: its value and interval when the calls suffice (None
    otherwise), how many calls there were and how many it needs."""

    q: float
    calls: int
    needed: int
    value: float | None
    low: float | None
    high: float | None
    level: float = 0.95

    @property
    def enough(self) -> bool:
        return self.value is not None

    @property
    def name(self) -> str:
        return quantile_name(self.q)

    def missing(self) -> str:
        """The sentence said instead of a quantile the calls cannot state."""
        return (f"not enough calls for a {self.name}: {self.calls} of {self.needed} needed")


def quantile(samples: npt.ArrayLike, q: float, level: float = 0.95) -> Quantile:
    """The ``q`` quantile of ``samples`` (linear interpolation, as numpy's percentile) and its
    distribution-free ``level`` interval from the order statistics; value, low and high are None
    when there are fewer calls than :func:`calls_needed`."""
    import numpy as np

    x = np.sort(np.asarray(samples, dtype=np.float64))
    n, needed = int(x.size), calls_needed(q, level)
    if n < needed:
        return Quantile(q, n, needed, None, None, None, level)
    alpha = (1.0 - level) / 2.0
    # P(x(l) <= ξ_q < x(u)) = B(u - 1) - B(l - 1), B the binomial(n, q) distribution function:
    # l the largest with B(l - 1) <= alpha, u the smallest with B(u - 1) >= 1 - alpha (1-based).
    cdf = _binomial_cdf(n, q)
    low_rank = max(1, int(np.searchsorted(cdf, alpha, side="right")))
    high_rank = min(n, int(np.searchsorted(cdf, 1.0 - alpha, side="left")) + 1)
    return Quantile(q, n, needed, float(np.percentile(x, 100 * q)), float(x[low_rank - 1]),
                    float(x[high_rank - 1]), level)


def _binomial_cdf(n: int, q: float) -> npt.NDArray[Any]:
    """P(X <= k) for k = 0..n, X ~ binomial(n, q), in log space (no scipy.stats: its import
    costs seconds on every gate)."""
    import numpy as np

    k = np.arange(n, dtype=np.float64)
    # log pmf(k + 1) - log pmf(k) = log((n - k) / (k + 1)) + log(q / (1 - q))
    steps = np.log((n - k) / (k + 1)) + math.log(q / (1.0 - q))
    log_pmf = n * math.log1p(-q) + np.concatenate([[0.0], np.cumsum(steps)])
    return np.asarray(np.minimum(np.cumsum(np.exp(log_pmf)), 1.0))


def _row_quantiles(x: npt.NDArray[Any], q: float) -> npt.NDArray[Any]:
    """The ``q`` quantile of each row, as numpy's linear percentile, by partial sorting (the
    bootstrap's thousands of rows: several times faster than a full sort)."""
    import numpy as np

    at = q * (x.shape[1] - 1)
    lo = math.floor(at)
    hi = min(lo + 1, x.shape[1] - 1)
    part = np.partition(x, [lo, hi], axis=1)
    frac = at - lo
    return np.asarray(part[:, lo] * (1.0 - frac) + part[:, hi] * frac)


@dataclass(frozen=True)
class QuantileRatio:
    """``new / old`` of a quantile: the point ratio, its bootstrap interval, and the one-sided
    p-value of "the ratio is at most ``bound``" (small: the calls say it is larger)."""

    q: float
    ratio: float
    low: float
    high: float
    bound: float
    p_value: float
    paired: bool
    calls: tuple[int, int]  # (old, new)
    level: float
    n_resamples: int


def quantile_ratio(new: npt.ArrayLike, old: npt.ArrayLike, q: float, *, bound: float = 1.0,
                   paired: bool = False, level: float = 0.95, seed: int = 0,
                   n_resamples: int = 2000) -> QuantileRatio:
    """Bootstrap the ratio of the ``q`` quantiles of ``new`` and ``old`` per-call timings (log
    scale, seeded). ``paired``: the calls were timed interleaved, ``new[i]`` beside ``old[i]``,
    so both are resampled with the same draws (the load they shared cancels). The interval is
    two-sided at ``level``; ``p_value`` is the share of resampled ratios at or below ``bound``."""
    import numpy as np

    a = np.log(np.maximum(np.asarray(new, dtype=np.float64), 1e-12))
    b = np.log(np.maximum(np.asarray(old, dtype=np.float64), 1e-12))
    if a.size < 2 or b.size < 2:
        raise UsageError(f"a quantile ratio needs at least 2 calls on each side, got "
                         f"{b.size} and {a.size}")
    if paired and a.size != b.size:
        raise UsageError(f"paired timings need as many calls on each side, got {b.size} and "
                         f"{a.size}")
    if bound <= 0:
        raise UsageError(f"the ratio bound must be positive, got {bound}")
    rng = np.random.default_rng(seed)
    rows_a = rng.integers(0, a.size, (n_resamples, a.size))
    rows_b = rows_a if paired else rng.integers(0, b.size, (n_resamples, b.size))
    logs = _row_quantiles(a[rows_a], q) - _row_quantiles(b[rows_b], q)
    point = float(np.percentile(a, 100 * q) - np.percentile(b, 100 * q))
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(logs, [alpha, 1.0 - alpha])
    p = (1 + int(np.count_nonzero(logs <= math.log(bound)))) / (n_resamples + 1)
    return QuantileRatio(q, math.exp(point), math.exp(float(lo)), math.exp(float(hi)), bound,
                         p, paired, (int(b.size), int(a.size)), level, n_resamples)
