"""Properties every paired test and interval must have, on hypothesis-generated scores."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from recallwatch.stats import bootstrap_ci, compare_scores, paired_test

TESTS = st.sampled_from(["randomization", "t", "wilcoxon"])
# Metric-like scores: in [0, 1], with repeats (ties) likely.
SCORES = st.floats(0.0, 1.0, allow_nan=False, width=32) | st.sampled_from([0.0, 0.1, 0.5, 1.0])


@st.composite
def paired(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 40))
    a = draw(arrays(np.float64, n, elements=SCORES))
    b = draw(arrays(np.float64, n, elements=SCORES))
    return a, b


@settings(max_examples=60, deadline=None)
@given(paired(), TESTS, st.integers(0, 2**32))
def test_p_value_is_a_probability_and_reproducible(pair: tuple[np.ndarray, np.ndarray],
                                                   test: str, seed: int) -> None:
    a, b = pair
    result = paired_test(a, b, test=test, seed=seed, n_resamples=500)  # type: ignore[arg-type]
    assert 0.0 <= result.p_value <= 1.0
    assert result == paired_test(a, b, test=test, seed=seed, n_resamples=500)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(paired(), TESTS)
def test_identical_systems_have_p_one_and_no_difference(pair: tuple[np.ndarray, np.ndarray],
                                                        test: str) -> None:
    a, _ = pair
    assert paired_test(a, a.copy(), test=test).p_value == 1.0  # type: ignore[arg-type]
    ci = bootstrap_ci(a, a.copy(), n_resamples=200)
    assert (ci.low, ci.high) == (0.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(paired(), TESTS, st.integers(0, 1000))
def test_swapping_a_and_b_flips_the_difference_not_the_p_value(
    pair: tuple[np.ndarray, np.ndarray], test: str, seed: int
) -> None:
    a, b = pair
    ab = compare_scores([str(i) for i in range(a.size)], {"m": a}, {"m": b}, test=test,  # type: ignore[arg-type]
                        seed=seed, n_resamples=300)["m"]
    ba = compare_scores([str(i) for i in range(a.size)], {"m": b}, {"m": a}, test=test,  # type: ignore[arg-type]
                        seed=seed, n_resamples=300)["m"]
    assert ba.delta == -ab.delta
    assert (ba.mean_a, ba.mean_b) == (ab.mean_b, ab.mean_a)
    assert (ba.wins, ba.ties, ba.losses) == (ab.losses, ab.ties, ab.wins)
    # Flipping every sign maps each sign assignment to its mirror: same extreme count.
    assert ba.p_value == ab.p_value
    if test != "randomization":
        assert ba.test.statistic == (ab.test.statistic if test == "wilcoxon"
                                     else -ab.test.statistic)


@settings(max_examples=40, deadline=None)
@given(paired(), st.sampled_from(["bca", "percentile"]))
def test_interval_holds_the_observed_mean_difference(pair: tuple[np.ndarray, np.ndarray],
                                                     method: str) -> None:
    a, b = pair
    ci = bootstrap_ci(a, b, method=method, n_resamples=400)  # type: ignore[arg-type]
    delta = float(np.mean(b - a))
    assert ci.low <= ci.high
    assert min(b - a) - 1e-12 <= ci.low and ci.high <= max(b - a) + 1e-12
    assert ci.low - 1e-12 <= delta <= ci.high + 1e-12
