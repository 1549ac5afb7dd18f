"""The drift test against references: KS per dimension equals scipy's, MMD² equals the textbook
kernel means, the permutation p-value's false alarm rate on undrifted data is the nominal one
(simulated truth), and a known mean shift is found."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import ks_2samp

from recallwatch.errors import InputError
from recallwatch.ops.drift_stats import (
    KS_ALPHA,
    drift_test,
    mmd_permutation_test,
    psi_per_dimension,
)


def test_ks_summary_equals_scipy_per_dimension() -> None:
    rng = np.random.default_rng(3)
    ref = rng.normal(size=(300, 8))
    cur = rng.normal(size=(250, 8))
    cur[:, :3] += 0.5  # three dimensions drift
    t = drift_test(ref, cur, seed=0)
    per_dim = [ks_2samp(ref[:, j], cur[:, j], method="asymp") for j in range(8)]
    assert t.ks_share_drifted == pytest.approx(
        np.mean([r.pvalue < KS_ALPHA for r in per_dim]))
    assert t.ks_share_drifted == pytest.approx(3 / 8)
    for worst in t.worst_ks:
        ref_result = per_dim[worst["dimension"]]
        assert worst["statistic"] == pytest.approx(ref_result.statistic)
        assert worst["p_value"] == pytest.approx(ref_result.pvalue)
    assert {w["dimension"] for w in t.worst_ks[:3]} == {0, 1, 2}
    assert {w["dimension"] for w in t.worst_psi[:3]} == {0, 1, 2}


def test_mmd2_equals_kernel_means_with_median_bandwidth() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(40, 5)), rng.normal(0.3, 1.0, size=(30, 5))
    mmd2, _, h = mmd_permutation_test(x, y, permutations=10, seed=0)
    z = np.concatenate([x, y])
    d = cdist(z, z)
    assert h == pytest.approx(np.median(d[np.triu_indices(len(z), 1)]), rel=1e-6)
    k = np.exp(-cdist(z, z, "sqeuclidean") / (2 * h * h))
    expected = k[:40, :40].mean() + k[40:, 40:].mean() - 2 * k[:40, 40:].mean()
    assert mmd2 == pytest.approx(expected, rel=1e-6)


def test_permutation_false_alarm_rate_is_nominal() -> None:
    rng = np.random.default_rng(11)
    draws = 200
    rejected = 0
    for i in range(draws):
        x, y = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
        rejected += mmd_permutation_test(x, y, permutations=99, seed=i)[1] < 0.05
    # nominal 0.05; Monte-Carlo standard error sqrt(0.05 * 0.95 / 200) ≈ 0.0154: ±3 of them
    assert abs(rejected / draws - 0.05) < 3 * np.sqrt(0.05 * 0.95 / draws)


def test_power_on_a_mean_shift() -> None:
    rng = np.random.default_rng(12)
    draws = 50
    found = sum(mmd_permutation_test(rng.normal(size=(30, 3)),
                                     rng.normal(1.0, 1.0, size=(30, 3)),
                                     permutations=99, seed=i)[1] < 0.05 for i in range(draws))
    assert found / draws >= 0.95


def test_psi_is_zero_on_identical_and_large_on_shifted_columns() -> None:
    rng = np.random.default_rng(5)
    ref = rng.normal(size=(2000, 2))
    assert psi_per_dimension(ref, ref) == pytest.approx([0.0, 0.0], abs=1e-12)
    shifted = ref + np.array([0.0, 1.0])
    psi = psi_per_dimension(ref, shifted)
    assert psi[0] == pytest.approx(0.0, abs=1e-12) and psi[1] > 0.5


def test_psi_matches_the_formula_on_known_bins() -> None:
    # reference deciles of 0..9 cut every value into its own bin; current puts all in two bins
    ref = np.arange(10, dtype=float)[:, None]
    cur = np.array([0.0] * 5 + [9.0] * 5)[:, None]
    r = np.full(10, 0.1)
    c = np.maximum(np.array([0.5] + [0.0] * 8 + [0.5]), 1e-4)
    assert psi_per_dimension(ref, cur)[0] == pytest.approx(float(((c - r) * np.log(c / r)).sum()))


def test_each_side_is_subsampled_and_the_bound_recorded() -> None:
    rng = np.random.default_rng(6)
    t = drift_test(rng.normal(size=(1500, 4)), rng.normal(size=(80, 4)), max_rows=100,
                   permutations=20, seed=1)
    assert (t.reference_rows, t.current_rows, t.max_rows) == (100, 80, 100)
    again = drift_test(rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), permutations=20)
    assert 1 / 21 <= again.p_value <= 1.0


@pytest.mark.parametrize(("ref", "cur", "word"), [
    (np.zeros((5, 3)), np.zeros((5, 4)), "dimensions"),
    (np.zeros((1, 3)), np.zeros((5, 3)), "at least 2 rows"),
])
def test_bad_input_is_a_located_error(ref: np.ndarray, cur: np.ndarray, word: str) -> None:
    with pytest.raises(InputError, match=word):
        drift_test(ref, cur)


def test_no_permutations_is_refused() -> None:
    with pytest.raises(InputError, match="permutation"):
        mmd_permutation_test(np.zeros((3, 2)), np.ones((3, 2)), permutations=0)
