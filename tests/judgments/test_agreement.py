"""Cohen's weighted kappa: hand-computed cases, edge cases, and scikit-learn as the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recallwatch.errors import InputError, UsageError
from recallwatch.judgments.agreement import (
    agreement,
    confusion_matrix,
    kappa_interval,
    weighted_kappa,
)


def test_hand_computed_example() -> None:
    # 10 items, grades 0-2. Observed agreement 7/10; unweighted kappa by hand:
    # rows (a) 0:4 1:3 2:3, columns (b) 0:3 1:4 2:3 -> chance = (12 + 12 + 9) / 100 = 0.33
    a = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    b = [0, 0, 0, 1, 1, 1, 2, 2, 2, 1]
    assert confusion_matrix(a, b).tolist() == [[3, 1, 0], [0, 2, 1], [0, 1, 2]]
    assert weighted_kappa(a, b, weights="unweighted") == pytest.approx((0.7 - 0.33) / (1 - 0.33))
    # linear weights: observed disagreement 3 near misses of weight 1 -> 0.3;
    # chance: sum over cells of |i-j| * row_i * col_j / 100
    rows, cols = np.array([4, 3, 3]) / 10, np.array([3, 4, 3]) / 10
    w = np.abs(np.subtract.outer(np.arange(3), np.arange(3)))
    chance = float((w * np.outer(rows, cols)).sum())
    assert weighted_kappa(a, b, weights="linear") == pytest.approx(1 - 0.3 / chance)


def test_perfect_chance_and_undefined() -> None:
    assert weighted_kappa([0, 1, 2, 3], [0, 1, 2, 3]) == 1.0
    assert math.isnan(weighted_kappa([2, 2, 2], [2, 2, 2]))  # one category: chance is zero
    assert weighted_kappa([0, 0, 1, 1], [0, 1, 0, 1], weights="unweighted") == pytest.approx(0.0)
    assert weighted_kappa([0, 3, 0, 3], [3, 0, 3, 0]) < 0  # systematic disagreement


@pytest.mark.parametrize("weights", ["quadratic", "linear", "unweighted"])
@pytest.mark.parametrize("seed", range(5))
def test_matches_scikit_learn(weights: str, seed: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 200)
    b = np.clip(a + rng.integers(-1, 2, 200) * (rng.random(200) < 0.4), 0, 3)
    ours = weighted_kappa(a, b, weights=weights)  # type: ignore[arg-type]
    theirs = metrics.cohen_kappa_score(a, b, weights=None if weights == "unweighted" else weights)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_agreement_record_and_errors() -> None:
    r = agreement([0, 1, 3], [0, 2, 3], categories=[0, 1, 2, 3], rater_a="human", rater_b="llm")
    d = r.to_dict()
    assert d["pairs"] == 3 and d["exact_agreement"] == pytest.approx(2 / 3)
    assert d["rows"] == "human" and len(d["confusion"]) == 4 and d["confusion"][1][2] == 1
    with pytest.raises(InputError, match="same length"):
        weighted_kappa([0, 1], [0])
    with pytest.raises(InputError, match="at least one labelled pair"):
        weighted_kappa([], [])
    with pytest.raises(InputError, match="integer grades"):
        weighted_kappa([0.5, 1.0], [0, 1])
    with pytest.raises(InputError, match=r"grades among \[0, 1\], found 2"):
        weighted_kappa([0, 2], [0, 1], categories=[0, 1])
    with pytest.raises(UsageError, match="unknown kappa weights"):
        weighted_kappa([0, 1], [0, 1], weights="cubic")  # type: ignore[arg-type]


def test_kappa_interval_is_seeded_holds_the_estimate_and_narrows() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 400)
    b = np.where(rng.random(400) < 0.7, a, rng.integers(0, 4, 400))
    kappa = weighted_kappa(a, b)
    small = kappa_interval(a[:40], b[:40])
    large = kappa_interval(a, b)
    assert large[0] < kappa < large[1]
    assert large[1] - large[0] < small[1] - small[0]
    assert kappa_interval(a, b) == large  # same seed, same interval
    assert agreement(a, b).ci == large
