"""How many queries a paired comparison needs: power of the two-sided paired t-test.

With ``n`` queries whose differences have standard deviation ``sd``, the t statistic of a true
mean difference ``delta`` follows a noncentral t with ``n - 1`` degrees of freedom and
noncentrality ``delta / sd * sqrt(n)``. Power is the chance that it lands beyond the critical
values; :func:`queries_needed` is the smallest ``n`` whose power reaches the target.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["paired_t_power", "queries_needed", "queries_needed_from"]

# Beyond this the answer is "more queries than anyone will label"; the search stops there.
_MAX_QUERIES = 1 << 40


def paired_t_power(n: int, delta: float, sd: float, *, alpha: float = 0.05) -> float:
    """Probability that a two-sided paired t-test at level ``alpha`` over ``n`` queries detects a
    true mean difference ``delta`` when per-query differences have standard deviation ``sd``."""
    from scipy import stats

    _check(delta, sd, alpha)
    if n < 2:
        raise UsageError(f"a paired t-test needs at least 2 queries, got n={n}")
    if delta == 0.0:
        return alpha
    if sd == 0.0:
        return 1.0
    df = n - 1
    noncentrality = abs(delta) / sd * math.sqrt(n)
    critical = float(stats.t.isf(alpha / 2.0, df))
    upper = float(stats.nct.sf(critical, df, noncentrality))
    # scipy's noncentral t returns NaN deep in a tail (e.g. df = 1e5, noncentrality 13): the
    # opposite tail is then an underflow to 0, and the upper one is 1 - its cdf.
    lower = float(stats.nct.cdf(-critical, df, noncentrality))
    if not math.isfinite(upper):
        upper = 1.0 - float(stats.nct.cdf(critical, df, noncentrality))
    power = upper + (lower if math.isfinite(lower) else 0.0)
    if not math.isfinite(power):  # last resort, accurate at the df where nct breaks down
        power = float(stats.norm.sf(critical - noncentrality)
                      + stats.norm.cdf(-critical - noncentrality))
    return min(1.0, max(0.0, power))


def queries_needed(
    delta: float, sd: float, *, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Smallest number of queries for which the paired t-test detects ``delta`` with ``power``.

    None when no number of queries can (``delta`` is 0) or more than 2**40 would be needed.
    """
    if not 0.0 < power < 1.0:
        raise UsageError(f"power must be strictly between 0 and 1, got {power}")
    _check(delta, sd, alpha)
    if delta == 0.0:
        return None
    if sd == 0.0:
        return 2

    from scipy.special import ndtri

    def enough(n: int) -> bool:
        return paired_t_power(n, delta, sd, alpha=alpha) >= power

    # The z-test's sample size is a lower bound (at equal n, t has less power than z): start
    # there, widen the bracket upwards until the power is reached, then bisect it.
    z_size = ((float(ndtri(1.0 - alpha / 2.0)) + float(ndtri(power))) * sd / abs(delta)) ** 2
    if z_size > _MAX_QUERIES:
        return None
    low = max(1, math.ceil(z_size) - 1)  # below 2 queries, or not enough
    high = max(2, low + 1)
    while not enough(high):
        if high >= _MAX_QUERIES:
            return None
        low, high = high, high + max(1, high // 4)
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high


def queries_needed_from(
    a: npt.ArrayLike, b: npt.ArrayLike, delta: float, *, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """:func:`queries_needed` with the spread of differences estimated from a pilot comparison.

    ``a`` and ``b`` are paired per-query scores of the two systems on the queries at hand.
    """
    from recallwatch.stats._paired import paired_differences

    d = paired_differences(a, b)
    if d.size < 2:
        raise UsageError("estimating the spread of differences needs at least 2 queries")
    return queries_needed(delta, float(d.std(ddof=1)), alpha=alpha, power=power)


def _check(delta: float, sd: float, alpha: float) -> None:
    if not math.isfinite(delta):
        raise UsageError(f"the difference to detect must be a finite number, got {delta}")
    if not (math.isfinite(sd) and sd >= 0.0):
        raise UsageError(f"the standard deviation must be finite and >= 0, got {sd}")
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"alpha must be strictly between 0 and 1, got {alpha}")
