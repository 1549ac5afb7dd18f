"""Quantiles of timings with their distribution-free confidence intervals, and the spread of a
few repeated rounds.

The interval of a quantile comes from order statistics: of ``n`` independent draws, the number
below the true ``q``-quantile is Binomial(n, q), so the ``l``-th and ``u``-th smallest draws
bracket it with probability ``P(l <= K < u)``. The ranks are picked so that each tail holds at
most ``(1 - level) / 2``; no shape of the latency distribution is assumed. Both ends exist only
from :func:`calls_needed` calls on (``ceil(log(0.025) / log(0.99)) = 368`` for a p99, 6 for the
median): with fewer, the slowest call observed may still be faster than the true p99 more than
2.5 % of the time. Two views of the same arithmetic: :func:`quantile` states a quantile only when
both ends exist (the gate's cost rule, which compares them), :func:`quantile_interval` always
states the value and leaves a bound the sample cannot give as None (sweeps and experiments,
which show it as ``?``). The low end alone needs far fewer calls (:func:`quantile_low_end`: one
call for the p99): "the p99 is at least this" can be said of a few dozen calls, "at most" cannot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallwatch.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["Quantile", "QuantileInterval", "calls_needed", "quantile", "quantile_interval",
           "quantile_low_end", "quantile_name", "rounds_separate"]


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
    low_rank, high_rank = _ranks(n, q, level)  # both exist from calls_needed on (rounding aside)
    return Quantile(q, n, needed, float(np.percentile(x, 100 * q)), float(x[(low_rank or 1) - 1]),
                    float(x[(high_rank or n) - 1]), level)


def quantile_low_end(samples: npt.ArrayLike, q: float, level: float = 0.95) -> float | None:
    """The low end of the ``q`` quantile's distribution-free ``level`` interval, which needs far
    fewer calls than the whole interval: the true quantile is below it at most ``(1 - level) /
    2`` of the time. From :func:`calls_needed` calls on it is the low end :func:`quantile`
    states. For the p99 it exists from one call on (the one call is above the p99 only 1 % of
    the time); None when no call qualifies (a median from under 6 calls) or none was made."""
    import numpy as np

    x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    if x.size == 0 or not 0.0 < q < 1.0:
        return None
    rank, _ = _ranks(int(x.size), q, level)
    return None if rank is None else float(x[rank - 1])


def _binomial_cdf(n: int, q: float) -> npt.NDArray[Any]:
    """P(X <= k) for k = 0..n, X ~ binomial(n, q), in log space (no scipy.stats: its import
    costs seconds on every gate)."""
    import numpy as np

    k = np.arange(n, dtype=np.float64)
    # log pmf(k + 1) - log pmf(k) = log((n - k) / (k + 1)) + log(q / (1 - q))
    steps = np.log((n - k) / (k + 1)) + math.log(q / (1.0 - q))
    log_pmf = n * math.log1p(-q) + np.concatenate([[0.0], np.cumsum(steps)])
    return np.asarray(np.minimum(np.cumsum(np.exp(log_pmf)), 1.0))


@dataclass(frozen=True, slots=True)
class QuantileInterval:
    """The ``q``-quantile of ``n`` samples (linear interpolation, as ``numpy.percentile``) and
    its ``level`` interval; a bound is None when ``n`` samples cannot give it."""

    q: float
    value: float
    low: float | None
    high: float | None
    n: int
    level: float

    @property
    def bounded(self) -> bool:
        return self.low is not None and self.high is not None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n,
                "level": self.level}

    def text(self, fmt: str = ".1f") -> str:
        """``7.0 [6.5, 7.4]``, or ``7.0 [?, 7.4]`` with a bound the sample cannot give."""
        def show(v: float | None) -> str:
            return "?" if v is None else format(v, fmt)

        return f"{format(self.value, fmt)} [{show(self.low)}, {show(self.high)}]"


def _ranks(n: int, q: float, level: float) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) of the order statistics bracketing the ``q``-quantile of ``n``
    draws, each None when its tail cannot be held to ``(1 - level) / 2``: ``l`` the largest with
    ``B(l - 1) <= tail``, ``u`` the smallest with ``B(u - 1) >= 1 - tail``, B the binomial(n, q)
    distribution function, so ``P(x(l) <= ξ_q < x(u)) >= level``."""
    import numpy as np

    tail = (1.0 - level) / 2.0
    cdf = _binomial_cdf(n, q)
    low = int(np.searchsorted(cdf, tail, side="right"))
    high = int(np.searchsorted(cdf, 1.0 - tail, side="left")) + 1
    return (low if low >= 1 else None, high if high <= n else None)


def quantile_interval(samples: npt.ArrayLike, q: float, *, level: float = 0.95
                      ) -> QuantileInterval:
    """The ``q``-quantile (0 < q < 1) of ``samples`` with its order-statistic interval."""
    import numpy as np

    if not 0.0 < q < 1.0:
        raise UsageError(f"a quantile must be strictly between 0 and 1, got {q}")
    if not 0.0 < level < 1.0:
        raise UsageError(f"confidence level must be strictly between 0 and 1, got {level}")
    x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    if x.size == 0:
        raise InputError(field="samples", expected="at least one timing", found="<none>")
    if not np.all(np.isfinite(x)):
        raise InputError(field="samples", expected="finite timings", found="NaN or inf")
    low, high = _ranks(int(x.size), q, level)
    return QuantileInterval(q, float(np.percentile(x, q * 100.0)),
                            None if low is None else float(x[low - 1]),
                            None if high is None else float(x[high - 1]), int(x.size), level)


def rounds_separate(a: npt.ArrayLike, b: npt.ArrayLike) -> bool:
    """True when every round of ``a`` is above every round of ``b`` or below every one: the
    ranges of the rounds do not overlap. For two settings of the same speed, timed in ``r``
    interleaved rounds each, that happens with probability ``2 / C(2r, r)`` (the two-sided
    Mann-Whitney test with no overlap): 10 % at 3 rounds, 2.9 % at 4, 0.8 % at 5."""
    import numpy as np

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0:
        return False
    return bool(x.min() > y.max() or y.min() > x.max())
