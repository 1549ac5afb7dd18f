"""Paired t-test and Wilcoxon signed-rank, checked against scipy and against enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from recallwatch.errors import InputError, UsageError
from recallwatch.stats import paired_test


def _pairs(seed: int, n: int, shift: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    return a, np.clip(a + rng.normal(shift, 0.1, n), 0.0, 1.0)


@pytest.mark.parametrize(("seed", "n"), [(0, 5), (1, 20), (2, 200), (3, 3000)])
def test_t_matches_scipy_ttest_rel(seed: int, n: int) -> None:
    a, b = _pairs(seed, n)
    ours = paired_test(a, b, test="t")
    ref = stats.ttest_rel(b, a)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert (ours.n, ours.method, ours.n_resamples) == (n, "student-t", 0)


@pytest.mark.parametrize(("seed", "n"), [(0, 8), (1, 30), (2, 50), (3, 51), (4, 400)])
def test_wilcoxon_matches_scipy_without_ties(seed: int, n: int) -> None:
    a, b = _pairs(seed, n)
    ours = paired_test(a, b, test="wilcoxon")
    ref = stats.wilcoxon(b, a)
    assert ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert ours.method == ("exact" if n <= 50 else "normal")


def test_wilcoxon_with_ties_and_zeros_matches_scipy_permutation_method() -> None:
    # Metric scores are discrete: tied magnitudes and zero differences are the common case.
    a = np.array([0.1, 0.3, 0.5, 0.5, 0.2, 0.7, 0.9, 0.4, 0.0, 0.6, 0.8, 0.3])
    b = np.array([0.2, 0.4, 0.5, 0.7, 0.1, 0.9, 1.0, 0.6, 0.1, 0.6, 1.0, 0.5])
    ours = paired_test(a, b, test="wilcoxon")
    d = (b - a).round(12)  # scipy, unlike us, sees rounding noise as distinct magnitudes
    ref = stats.wilcoxon(d[d != 0], method=stats.PermutationMethod(n_resamples=np.inf))
    assert ours.method == "exact"
    assert ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_wilcoxon_exact_p_equals_full_enumeration_of_signed_ranks() -> None:
    d = np.array([0.4, -0.1, 0.25, 0.3, 0.3, -0.05, 0.6, 0.3, 0.45])  # ties among the 0.3s
    ranks = stats.rankdata(np.abs(d)) * np.sign(d)
    observed = abs(ranks.sum())
    sums = [abs(np.dot(s, ranks)) for s in itertools.product((-1, 1), repeat=d.size)]
    expected = np.mean(np.array(sums) >= observed - 1e-9)
    assert paired_test(np.zeros(d.size), d, test="wilcoxon").p_value == pytest.approx(expected)


def test_wilcoxon_many_tied_differences_uses_the_normal_approximation() -> None:
    a = np.zeros(40)
    b = np.tile([0.1, 0.1, -0.1, 0.2, 0.0], 8)
    ours = paired_test(a, b, test="wilcoxon")
    ref = stats.wilcoxon(b[b != 0], method="asymptotic")
    assert ours.method == "normal"
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
def test_identical_scores_give_p_one(test: str) -> None:
    a = np.array([0.2, 0.5, 0.5, 1.0])
    result = paired_test(a, a.copy(), test=test)  # type: ignore[arg-type]
    assert result.p_value == 1.0
    assert result.statistic == 0.0


def test_t_constant_nonzero_shift_is_infinitely_significant() -> None:
    result = paired_test(np.zeros(6), np.full(6, 0.25), test="t")
    assert result.statistic == np.inf
    assert result.p_value == 0.0


def test_single_pair_carries_no_evidence() -> None:
    for test in ("t", "wilcoxon", "randomization"):
        assert paired_test([0.2], [0.9], test=test).p_value == 1.0


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([0.1, 0.2], [0.1], "field 'b': expected as many scores as a (2), found 1"),
        ([], [], "field 'a': expected at least one query, found <no scores>"),
        ([0.1, float("nan")], [0.1, 0.2],
         "record 'position 1': field 'a': expected a finite score, found nan"),
        ([[0.1, 0.2]], [[0.1, 0.2]],
         "field 'a': expected a 1-D array of per-query scores, found <an array of shape (1, 2)>"),
        (["x"], [0.1], "field 'a': expected an array of numbers"),
    ],
)
def test_bad_arrays_are_input_errors(a: object, b: object, message: str) -> None:
    with pytest.raises(InputError) as info:
        paired_test(a, b)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)


def test_unknown_test_lists_the_valid_ones() -> None:
    valid = "unknown test 'z'; valid tests: randomization, t, wilcoxon"
    with pytest.raises(UsageError, match=valid):
        paired_test([0.1, 0.2], [0.2, 0.3], test="z")  # type: ignore[arg-type]
