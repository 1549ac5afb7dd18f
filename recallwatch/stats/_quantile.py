"""A percentile of timings with its distribution-free confidence interval, and the spread of a
few repeated rounds.

The interval of a quantile comes from order statistics: of ``n`` independent draws, the number
below the true ``q``-quantile is Binomial(n, q), so the ``l``-th and ``u``-th smallest draws
bracket it with probability ``P(l <= K < u)``. The ranks are picked so that each tail holds at
most ``(1 - level) / 2``; no shape of the latency distribution is assumed. When the sample is too
small for a tail (a p99 of 50 calls: even the largest call is under the true p99 with
probability 0.99**50 = 0.6), that bound is None: the sample cannot bound it, and a report says so
instead of printing a number that looks exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallwatch.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["QuantileInterval", "quantile_interval", "rounds_separate"]


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
    """1-based ranks (l, u) of the order statistics bracketing the ``q``-quantile, each None
    when its tail cannot be held to ``(1 - level) / 2`` with ``n`` draws."""
    ppf, cdf = _binomial()
    tail = (1.0 - level) / 2.0
    # P(K < l) <= tail: l - 1 below binom.ppf(tail), the smallest k whose cdf reaches tail
    low = int(ppf(tail, n, q))
    high = int(ppf(1.0 - tail, n, q)) + 1  # P(K >= u) <= tail
    return (low if low >= 1 and cdf(low - 1, n, q) <= tail else None,
            high if high <= n else None)


def _binomial() -> tuple[Callable[[float, int, float], Any], Callable[[int, int, float], Any]]:
    """The binomial distribution's ppf and cdf, ``(x, n, p)``, for 0 < x < 1 and 0 <= k < n.

    They are the functions ``scipy.stats.binom`` computes them with, taken from
    ``scipy.special``: importing ``scipy.stats`` costs about 1 CPU-second, which ``bench``
    paid for each sweep's latency intervals. The same numbers (tested against
    ``scipy.stats.binom``); ``scipy.stats`` itself where a SciPy lacks them."""
    try:
        from scipy.special._ufuncs import _binom_cdf, _binom_ppf
    except ImportError:  # another SciPy's layout
        from scipy.stats import binom

        return binom.ppf, binom.cdf
    return _binom_ppf, _binom_cdf


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
