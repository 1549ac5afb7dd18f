"""The order-statistic ranks of a quantile's interval (``bench``'s latency intervals) are those
``scipy.stats.binom`` gives, computed without importing ``scipy.stats``."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scipy.stats import binom

from recallwatch.stats._quantile import _ranks


def _scipy_ranks(n: int, q: float, level: float) -> tuple[int | None, int | None]:
    tail = (1.0 - level) / 2.0
    low = int(binom.ppf(tail, n, q))
    high = int(binom.ppf(1.0 - tail, n, q)) + 1
    return (low if low >= 1 and binom.cdf(low - 1, n, q) <= tail else None,
            high if high <= n else None)


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("q", [0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999])
def test_ranks_are_scipy_stats_binom_s(q: float, level: float) -> None:
    for n in [*range(1, 300), 500, 1000, 1001, 10_000, 100_000]:
        assert _ranks(n, q, level) == _scipy_ranks(n, q, level), n


def test_an_interval_does_not_import_scipy_stats() -> None:
    code = ("import sys; from recallwatch.stats._quantile import quantile_interval; "
            "i = quantile_interval(range(1, 201), 0.9); print(i.bounded, 'scipy.stats' in "
            "sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "False"]
