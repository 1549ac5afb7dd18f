"""Paired randomization test: exact enumeration equals scipy's, Monte Carlo converges to it,
and the same seed always gives the same p-value."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from recallwatch.errors import UsageError
from recallwatch.stats import paired_test


def _scipy_exact(a: np.ndarray, b: np.ndarray) -> float:
    res = stats.permutation_test(
        (b, a), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=np.inf, alternative="two-sided",
    )
    return float(res.pvalue)


def _discrete_pairs(seed: int, n: int, steps: int = 8) -> tuple[np.ndarray, np.ndarray]:
    # Like P@k: multiples of 1/steps, so many differences tie and some are zero.
    rng = np.random.default_rng(seed)
    a = rng.integers(0, steps + 1, n) / steps
    b = np.clip(a + rng.integers(-2, 4, n) / steps, 0.0, 1.0)
    return a, b


@pytest.mark.parametrize(("seed", "n"), [(0, 6), (1, 10), (2, 13)])
def test_exact_enumeration_equals_scipy_permutation_test(seed: int, n: int) -> None:
    a, b = _discrete_pairs(seed, n)
    ours = paired_test(a, b, test="randomization", n_resamples=10_000)
    assert ours.method == "exact"
    assert ours.n_resamples == 0
    assert ours.p_value == pytest.approx(_scipy_exact(a, b), rel=1e-12)


@pytest.mark.parametrize("seed", [2, 12])
def test_rounding_noise_does_not_break_ties(seed: int) -> None:
    # Tenths are not exact in binary: sums of the same differences in another order differ in
    # the last bits. The reference runs on the integers (tenths x 10), where arithmetic is exact.
    a, b = _discrete_pairs(seed, 13, steps=10)
    exact = _scipy_exact(np.rint(a * 10), np.rint(b * 10))
    assert paired_test(a, b).p_value == pytest.approx(exact, rel=1e-12)


def test_exact_enumeration_on_continuous_scores() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(12), rng.random(12)
    assert paired_test(a, b).p_value == pytest.approx(_scipy_exact(a, b), rel=1e-12)


@pytest.mark.parametrize("seed", [3, 4])
def test_monte_carlo_converges_to_the_exact_p_value(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.random(17), rng.random(17)  # 131,072 sign assignments, enumerated by scipy
    exact = _scipy_exact(a, b)
    resamples = 40_000
    ours = paired_test(a, b, test="randomization", n_resamples=resamples, seed=seed)
    assert ours.method == "monte-carlo"
    assert ours.n_resamples == resamples
    standard_error = np.sqrt(exact * (1 - exact) / resamples)
    assert abs(ours.p_value - exact) <= 5 * standard_error + 1 / resamples


def test_same_seed_gives_the_identical_p_value() -> None:
    rng = np.random.default_rng(11)
    a = rng.random(500)
    b = a + rng.normal(0.01, 0.1, 500)
    first = paired_test(a, b, seed=42, n_resamples=5_000)
    assert all(paired_test(a, b, seed=42, n_resamples=5_000) == first for _ in range(3))
    others = {paired_test(a, b, seed=s, n_resamples=5_000).p_value for s in range(5)}
    assert len(others) > 1  # the seed really drives the draws


def test_p_value_does_not_depend_on_the_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    from recallwatch.stats import _randomization

    rng = np.random.default_rng(5)
    a = rng.random(3_000)
    b = a + rng.normal(0.0, 0.2, a.size)
    whole = paired_test(a, b, seed=1)
    monkeypatch.setattr(_randomization, "_BLOCK_CELLS", 4_000)  # ~10 draws per block
    assert paired_test(a, b, seed=1) == whole


def test_monte_carlo_p_value_counts_the_observed_assignment() -> None:
    # A huge effect: no random assignment reaches it, so p is exactly 1 / (R + 1), never 0.
    a = np.zeros(40)
    b = np.linspace(0.5, 1.0, 40)
    assert paired_test(a, b, n_resamples=999).p_value == 1 / 1000


def test_exact_when_the_enumeration_fits_in_the_resamples() -> None:
    a, b = _discrete_pairs(8, 30)
    nonzero = int(np.count_nonzero(b - a))
    assert paired_test(a, b, n_resamples=2**nonzero).method == "exact"
    assert paired_test(a, b, n_resamples=2**nonzero - 1).method == "monte-carlo"


def test_statistic_is_the_mean_difference() -> None:
    a, b = _discrete_pairs(9, 25)
    assert paired_test(a, b).statistic == pytest.approx(float(np.mean(b - a)))


def test_resamples_must_be_positive() -> None:
    with pytest.raises(UsageError, match="n_resamples must be at least 1, got 0"):
        paired_test([0.1, 0.2], [0.3, 0.1], n_resamples=0)


@pytest.mark.parametrize("test", ["randomization", "t", "wilcoxon"])
def test_float_noise_of_equal_scores_is_no_difference(test: str) -> None:
    # 0.1 + 0.2 is 0.30000000000000004: the same score computed two ways. Twenty queries of
    # such noise, all the same sign, must not be a significant difference.
    a = np.full(20, 0.3)
    b = np.full(20, 0.1 + 0.2)
    assert np.all(b - a > 0)
    result = paired_test(a, b, test=test)  # type: ignore[arg-type]
    assert (result.p_value, result.statistic) == (1.0, 0.0)
