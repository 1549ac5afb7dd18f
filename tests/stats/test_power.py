"""Queries needed to detect a difference: the noncentral-t power of the paired t-test."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from scipy import stats

from recallwatch.errors import UsageError
from recallwatch.stats import paired_t_power, queries_needed, queries_needed_from


@pytest.mark.parametrize(("effect", "power", "expected"), [
    # G*Power 3.1, "t tests - Means: difference from constant (one sample case)", two tails,
    # alpha 0.05: the standard published sample sizes.
    (0.5, 0.80, 34),
    (0.2, 0.80, 199),
    (0.8, 0.80, 15),
    (0.5, 0.95, 54),
])
def test_matches_published_sample_sizes(effect: float, power: float, expected: int) -> None:
    assert queries_needed(effect, 1.0, power=power) == expected


def test_answer_is_the_smallest_n_reaching_the_power() -> None:
    n = queries_needed(0.002, 0.03, alpha=0.05, power=0.9)
    assert n is not None
    assert paired_t_power(n, 0.002, 0.03) >= 0.9 > paired_t_power(n - 1, 0.002, 0.03)


def test_power_agrees_with_simulated_t_tests() -> None:
    rng = np.random.default_rng(0)
    n, delta, sd = 20, 0.03, 0.06
    d = rng.normal(delta, sd, size=(20_000, n))
    simulated = float(np.mean(stats.ttest_1samp(d, 0.0, axis=1).pvalue <= 0.05))
    assert paired_t_power(n, delta, sd) == pytest.approx(simulated, abs=0.015)


def test_sign_of_delta_does_not_matter() -> None:
    assert queries_needed(-0.01, 0.05) == queries_needed(0.01, 0.05)


def test_chapter_example_needs_far_more_than_a_hundred_queries() -> None:
    # Chapter 001: recall 0.951 vs 0.953 over a hundred queries "is probably noise".
    needed = queries_needed(0.002, 0.05)
    assert needed is not None and needed > 100 * 10


def test_degenerate_cases() -> None:
    assert queries_needed(0.0, 0.1) is None
    assert queries_needed(0.1, 0.0) == 2
    assert paired_t_power(10, 0.0, 0.1) == 0.05


def test_from_pilot_scores_uses_their_spread() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(50)
    b = a + rng.normal(0.0, 0.1, 50)
    sd = float(np.std(b - a, ddof=1))
    assert queries_needed_from(a, b, 0.02) == queries_needed(0.02, sd)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"delta": 0.1, "sd": 1.0, "power": 1.0}, "power must be strictly between 0 and 1"),
    ({"delta": 0.1, "sd": -1.0}, "the standard deviation must be finite and >= 0"),
    ({"delta": float("nan"), "sd": 1.0}, "the difference to detect must be a finite number"),
    ({"delta": 0.1, "sd": 1.0, "alpha": 0.0}, "alpha must be strictly between 0 and 1"),
])
def test_bad_arguments(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        queries_needed(**kwargs)


def test_power_is_finite_and_monotone_where_scipys_noncentral_t_returns_nan() -> None:
    # df = 1e5 with noncentrality ~13: scipy.stats.nct.cdf of the lower tail is NaN.
    ns = np.unique(np.geomspace(2, 10**8, 80).astype(int))
    powers = [paired_t_power(int(n), 0.002, 0.05) for n in ns]
    assert all(0.0 <= p <= 1.0 for p in powers)
    assert all(later >= earlier - 1e-12 for earlier, later in pairwise(powers))
    assert paired_t_power(100_001, 0.002, 0.05) == pytest.approx(1.0)


def test_very_small_differences() -> None:
    # The z-test bound: ((1.96 + 0.84) / 1e-5)^2 ~ 7.8e10 queries; t needs at least as many.
    n = queries_needed(1e-5, 1.0)
    assert n is not None and 7.8e10 < n < 7.9e10
    assert queries_needed(1e-7, 1.0) is None  # beyond 2**40 queries
