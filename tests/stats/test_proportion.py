"""Wilson's interval of a proportion against scipy's (``binomtest(...).proportion_ci``), and the
estimate always inside its own interval, 0 and all hits included."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from recallwatch.stats import wilson_interval


@pytest.mark.parametrize(("k", "n"), [(0, 5), (1, 5), (5, 5), (3, 10), (0, 1000), (310, 1000),
                                      (999, 1000)])
def test_wilson_equals_scipy_and_holds_its_estimate(k: int, n: int) -> None:
    low, high = wilson_interval(k, n)
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert float(low) == pytest.approx(ref.low, abs=1e-12)
    assert float(high) == pytest.approx(ref.high, abs=1e-12)
    assert float(low) <= k / n <= float(high)


def test_no_trials_give_the_whole_range() -> None:
    low, high = wilson_interval([0, 2], [0, 4])
    assert low.tolist()[0] == 0.0 and high.tolist()[0] == 1.0
