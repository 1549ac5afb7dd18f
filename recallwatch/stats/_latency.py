"""The ratio of a latency quantile between two sets of calls (a candidate and a baseline), with
the interval that follows from each side's distribution-free interval.

The new quantile is at least its interval's low end, the old one at most its high end, so the
ratio is at least ``new.low / old.high``. Claiming a rise when that exceeds a bound is wrong at
most 5 % of the time (2.5 % on each side), whatever the shape of the timings, and without
resampling (a bootstrap of a p99 from a few hundred calls rests on its few slowest calls and
claims more than they show). The quantiles themselves: :mod:`recallwatch.stats._quantile`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from recallwatch.errors import UsageError
from recallwatch.stats._quantile import Quantile, quantile

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["QuantileRatio", "quantile_ratio"]


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
