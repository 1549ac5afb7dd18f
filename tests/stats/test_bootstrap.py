"""Bootstrap interval of the mean difference, against scipy.stats.bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from recallwatch.errors import UsageError
from recallwatch.stats import bootstrap_ci


def _skewed_pairs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    # Skewed, discrete differences (most queries unchanged, a few jump): where BCa and the
    # percentile interval differ.
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 11, n) / 10
    jump = rng.random(n) < 0.15
    b = np.where(jump, np.minimum(1.0, a + rng.integers(1, 6, n) / 10), a)
    return a, b


@pytest.mark.parametrize("method", ["percentile", "bca"])
# n = 40 resamples query indices; n = 200 (>= 16 queries per distinct difference) resamples
# counts of each distinct difference: both must give scipy's interval.
@pytest.mark.parametrize(("seed", "n"), [(0, 40), (1, 200)])
def test_interval_matches_scipy_bootstrap(method: str, seed: int, n: int) -> None:
    a, b = _skewed_pairs(seed, n)
    ours = bootstrap_ci(a, b, method=method, seed=seed, n_resamples=40_000)  # type: ignore[arg-type]
    ref = stats.bootstrap(
        (b - a,), np.mean, method="BCa" if method == "bca" else "percentile",
        n_resamples=40_000, rng=np.random.default_rng(seed + 100),
    ).confidence_interval
    # Independent random streams: agree to ~4 Monte Carlo standard errors of an interval end,
    # plus one step of the grid the resampled means live on (differences are tenths).
    tolerance = 0.05 * float(np.std(b - a, ddof=1) / np.sqrt(n)) + 0.1 / n
    assert ours.low == pytest.approx(ref.low, abs=tolerance)
    assert ours.high == pytest.approx(ref.high, abs=tolerance)
    assert (ours.level, ours.method, ours.n_resamples) == (0.95, method, 40_000)


def test_bca_shifts_toward_the_skew() -> None:
    a, b = _skewed_pairs(3, 60)
    bca = bootstrap_ci(a, b, method="bca")
    percentile = bootstrap_ci(a, b, method="percentile")
    # Right-skewed differences: BCa moves both ends up relative to the percentile interval.
    assert bca.low >= percentile.low
    assert bca.high >= percentile.high
    assert bca.low <= float(np.mean(b - a)) <= bca.high


def test_same_seed_same_interval_and_level_widens_it() -> None:
    a, b = _skewed_pairs(4, 80)
    assert bootstrap_ci(a, b, seed=9) == bootstrap_ci(a, b, seed=9)
    narrow = bootstrap_ci(a, b, level=0.8)
    wide = bootstrap_ci(a, b, level=0.99)
    assert wide.low <= narrow.low and narrow.high <= wide.high


def test_equal_differences_give_a_point_interval() -> None:
    a = np.linspace(0.0, 0.5, 10)
    assert bootstrap_ci(a, a + 0.25).low == pytest.approx(0.25)
    same = bootstrap_ci(a, a)
    assert (same.low, same.high) == (0.0, 0.0)


def test_bad_options_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="confidence level must be strictly between 0 and 1"):
        bootstrap_ci([0.1, 0.2], [0.3, 0.1], level=1.0)
    with pytest.raises(UsageError, match="unknown interval method 'bc'; valid: bca, percentile"):
        bootstrap_ci([0.1, 0.2], [0.3, 0.1], method="bc")  # type: ignore[arg-type]
