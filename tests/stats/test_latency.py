"""Quantiles of per-call timings with distribution-free intervals, and the bootstrap of the ratio
of two quantiles: checked against scipy's binomial distribution and against simulated truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from recallwatch.errors import UsageError
from recallwatch.stats import (
    calls_needed,
    quantile,
    quantile_interval,
    quantile_low_end,
    quantile_ratio,
)


def test_calls_needed_is_the_first_count_whose_interval_has_both_ends() -> None:
    assert calls_needed(0.99) == 368 and calls_needed(0.5) == 6 and calls_needed(0.95) == 72
    for q in (0.5, 0.9, 0.99):
        n = calls_needed(q)
        # with n calls the slowest one is above the true quantile often enough; with n - 1 not
        assert 1 - q ** n >= 0.975 > 1 - q ** (n - 1)
    with pytest.raises(UsageError, match="strictly between 0 and 1"):
        calls_needed(1.0)


def test_a_quantile_of_too_few_calls_is_not_stated() -> None:
    est = quantile(np.arange(13.0), 0.99)
    assert est.value is None and est.low is None and not est.enough
    assert est.missing() == "not enough calls for a p99: 13 of 368 needed"
    assert quantile(np.arange(6.0), 0.5).enough and not quantile(np.arange(5.0), 0.5).enough


def test_the_interval_is_the_order_statistics_scipy_gives() -> None:
    x = np.random.default_rng(0).lognormal(size=500)
    est = quantile(x, 0.99)
    s = np.sort(x)
    assert est.value == pytest.approx(np.percentile(x, 99))
    # both ends from the binomial distribution of the count of calls below the true p99
    lo = int(binom.ppf(0.025, 500, 0.99))
    hi = int(binom.ppf(0.975, 500, 0.99)) + 1
    assert (est.low, est.high) == (s[lo - 1], s[min(hi, 500) - 1])


def test_the_interval_covers_the_true_quantile_at_least_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(1)
    truth = math.exp(2.3263478740408408)  # the p99 of a standard log-normal
    covered = 0
    for _ in range(400):
        est = quantile(rng.lognormal(size=400), 0.99)
        assert est.low is not None and est.high is not None
        covered += est.low <= truth <= est.high
    assert covered / 400 >= 0.93  # nominal 0.95 or more (order statistics are conservative)


def test_the_ratio_of_two_quantiles() -> None:
    rng = np.random.default_rng(2)
    old = rng.lognormal(0.0, 0.4, 400)
    same = quantile_ratio(rng.lognormal(0.0, 0.4, 400), old, 0.5)
    assert same.low < 1.0 < same.high and not same.real
    slower = quantile_ratio(3.0 * rng.lognormal(0.0, 0.4, 400), old, 0.99, bound=2.0)
    assert slower.real and 2.0 < slower.low < 3.0 < slower.high
    assert slower.calls == (400, 400) and not slower.paired
    # the interval follows from each side's: the new p99 at least, the old one at most
    assert slower.low == pytest.approx(slower.new.low / slower.old.high)  # type: ignore[operator]
    with pytest.raises(UsageError, match="a ratio of p99s needs 368 calls on each side"):
        quantile_ratio(old[:100], old, 0.99)
    with pytest.raises(UsageError, match="as many calls on each side"):
        quantile_ratio(old[:300], old, 0.5, paired=True)


def test_an_unchanged_distribution_is_called_real_at_most_5_percent_of_the_time() -> None:
    """Same distribution, heavy tail: the rise claims of the p99 and of the median are rare
    (the bound each side's interval gives is wrong at most 2.5 % of the time per side)."""
    rng = np.random.default_rng(4)
    claims = {0.5: 0, 0.99: 0}
    for _ in range(400):
        a, b = rng.lognormal(0.0, 0.6, 368), rng.lognormal(0.0, 0.6, 368)
        for q in claims:
            claims[q] += quantile_ratio(a, b, q).real
    assert claims[0.5] <= 20 and claims[0.99] <= 20  # 5 % of 400


@pytest.mark.parametrize("n", [1, 5, 6, 20, 71, 72, 367, 368, 1000])
@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_both_views_of_a_quantile_use_the_ranks_scipy_gives(n: int, q: float) -> None:
    """quantile_interval states every bound the sample gives (None for a tail it cannot hold),
    quantile states both or nothing; the bounds are the order statistics scipy's binomial
    distribution names, and the two views agree where both speak."""
    x = np.random.default_rng(n).lognormal(size=n)
    s = np.sort(x)
    lo = int(binom.ppf(0.025, n, q))
    lo = lo if lo >= 1 and binom.cdf(lo - 1, n, q) <= 0.025 else None
    hi = int(binom.ppf(0.975, n, q)) + 1
    hi = hi if hi <= n else None
    got = quantile_interval(x, q)
    assert got.value == pytest.approx(np.percentile(x, 100 * q)) and got.n == n
    assert got.low == (None if lo is None else s[lo - 1])
    assert got.high == (None if hi is None else s[hi - 1])
    both = quantile(x, q)
    assert both.enough == (n >= calls_needed(q)) == got.bounded
    if both.enough:
        assert (both.low, both.high, both.value) == (got.low, got.high, got.value)


@pytest.mark.parametrize("n", [1, 5, 30, 120])
def test_the_p99_low_end_from_few_calls_is_above_the_true_p99_at_most_2_5_percent(n: int) -> None:
    """Simulated truth: log-normal calls, whose p99 is known; the low end stated from ``n``
    calls (far fewer than the 368 the whole interval needs) exceeds it in at most 2.5 % of
    4,000 draws (plus the draws' own error)."""
    rng = np.random.default_rng(n)
    true_p99 = float(np.exp(0.5 * 2.3263478740408408))
    over = sum((quantile_low_end(rng.lognormal(0.0, 0.5, n), 0.99) or 0.0) > true_p99
               for _ in range(4000))
    assert over / 4000 <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / 4000)


def test_the_low_end_is_the_whole_intervals_from_enough_calls() -> None:
    x = np.random.default_rng(1).lognormal(0.0, 0.5, 1000)
    for q in (0.5, 0.99):
        assert quantile_low_end(x, q) == quantile(x, q).low
    assert quantile_low_end(x[:5], 0.5) is None  # a median's low end needs 6 calls
    assert quantile_low_end([], 0.99) is None
