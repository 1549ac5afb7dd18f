"""Timings with their spread: quantiles of per-call latencies with distribution-free intervals,
how many calls a quantile needs, and a seeded bootstrap of the ratio of two quantiles.

A quantile's interval comes from the order statistics of the calls (no shape assumed): the 95 %
interval of the p99 is ``[x(l), x(u)]`` with ``l`` and ``u`` read from the binomial distribution of
how many calls fall below the true p99. Both ends exist only from
``ceil(log(0.025) / log(0.99)) = 368`` calls on: with fewer, the slowest call observed may still
be faster than the true p99 more than 2.5 % of the time, so no p99 is stated. The median needs 6.
The low end alone needs far fewer (:func:`quantile_low_end`: one call for the p99): "the p99 is
at least this" can be said of a few dozen calls, "at most" cannot.

The ratio of a quantile between two sets of calls (a candidate and a baseline) follows from the
two intervals: the new quantile is at least its interval's low end, the old one at most its high
end, so the ratio is at least ``new.low / old.high``. Claiming a rise when that exceeds a bound is
wrong at most 5 % of the time (2.5 % on each side), whatever the shape of the timings, and
without resampling (a bootstrap of a p99 from a few hundred calls rests on its few slowest calls
and claims more than they show).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["Quantile", "QuantileRatio", "calls_needed", "quantile", "quantile_low_end",
           "quantile_name", "quantile_ratio"]


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


def quantile_low_end(samples: npt.ArrayLike, q: float, level: float = 0.95) -> float | None:
    """The low end of the ``q`` quantile's distribution-free ``level`` interval, which needs far
    fewer calls than the whole interval: the true quantile is below it at most ``(1 - level) /
    2`` of the time. The largest order statistic ``x(l)`` with ``B(l - 1) <= (1 - level) / 2``
    (B the binomial(n, q) distribution function); from 368 calls on, the low end
    :func:`quantile` states. For the p99 it exists from one call on (the one call is above the
    p99 only 1 % of the time); None when no call qualifies (a median from under 6 calls)."""
    import numpy as np

    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = int(x.size)
    if n == 0 or not 0.0 < q < 1.0:
        return None
    cdf = _binomial_cdf(n, q)
    rank = int(np.searchsorted(cdf, (1.0 - level) / 2.0, side="right"))
    return None if rank < 1 else float(x[rank - 1])


def _binomial_cdf(n: int, q: float) -> npt.NDArray[Any]:
    """P(X <= k) for k = 0..n, X ~ binomial(n, q), in log space (no scipy.stats: its import
    costs seconds on every gate)."""
    import numpy as np

    k = np.arange(n, dtype=np.float64)
    # log pmf(k + 1) - log pmf(k) = log((n - k) / (k + 1)) + log(q / (1 - q))
    steps = np.log((n - k) / (k + 1)) + math.log(q / (1.0 - q))
    log_pmf = n * math.log1p(-q) + np.concatenate([[0.0], np.cumsum(steps)])
    return np.asarray(np.minimum(np.cumsum(np.exp(log_pmf)), 1.0))


@dataclass(frozen=True)
class QuantileRatio:
    """``new / old`` of a quantile: the point ratio and the interval that follows from each
    side's distribution-free interval (``low = new.low / old.high``, ``high = new.high /
    old.low``); ``bound`` is what ``low`` must exceed for the rise to count as real."""

    q: float
    ratio: float
    low: float
    high: float
    bound: float
    paired: bool
    calls: tuple[int, int]  # (old, new)
    level: float
    new: Quantile
    old: Quantile

    @property
    def real(self) -> bool:
        """The new quantile's lowest plausible value exceeds ``bound`` times the old one's
        highest: wrong at most ``1 - level`` of the time (each side's interval misses its true
        quantile on that side at most half of it)."""
        return self.low > self.bound


def quantile_ratio(new: npt.ArrayLike, old: npt.ArrayLike, q: float, *, bound: float = 1.0,
                   paired: bool = False, level: float = 0.95) -> QuantileRatio:
    """The ratio of the ``q`` quantiles of ``new`` and ``old`` per-call timings, with the
    interval that follows from their two distribution-free intervals (see :func:`quantile`; both
    sides need the calls it needs). ``paired``: the calls were timed interleaved, ``new[i]``
    beside ``old[i]``, so both met the same load (recorded; the arithmetic is the same)."""
    import numpy as np

    a, b = quantile(new, q, level), quantile(old, q, level)
    if not (a.enough and b.enough):
        short = a if not a.enough else b
        raise UsageError(f"a ratio of {short.name}s needs {short.needed} calls on each side, "
                         f"got {b.calls} and {a.calls}")
    if paired and a.calls != b.calls:
        raise UsageError(f"paired timings need as many calls on each side, got {b.calls} and "
                         f"{a.calls}")
    if bound <= 0:
        raise UsageError(f"the ratio bound must be positive, got {bound}")
    assert a.value is not None and a.low is not None and a.high is not None  # enough
    assert b.value is not None and b.low is not None and b.high is not None
    tiny = float(np.finfo(np.float64).tiny)
    return QuantileRatio(q, a.value / max(b.value, tiny), a.low / max(b.high, tiny),
                         a.high / max(b.low, tiny), bound, paired, (b.calls, a.calls), level, a, b)
