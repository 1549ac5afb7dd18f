"""The order-statistic ranks of a quantile's interval (``bench``'s latency intervals) are those
``scipy.stats.binom`` gives, computed without importing ``scipy.stats``: equal everywhere except
where a tail probability equals the tail exactly (``P(K < l) = (1 - level) / 2``, e.g. one draw
of the 0.9 quantile at level 0.8), where the last bit of either computation decides; there both
ranks hold the tail to the level."""

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
    tail = (1.0 - level) / 2.0
    for n in [*range(1, 300), 500, 1000, 1001, 10_000, 100_000]:
        ours, theirs = _ranks(n, q, level), _scipy_ranks(n, q, level)
        for mine, scipys, side in zip(ours, theirs, ("low", "high"), strict=True):
            if mine == scipys:
                continue
            # an exact tie: the tail probability at the rank in question is the tail itself
            k = (mine or scipys or 1) - 1 if side == "low" else (mine or scipys or n + 1) - 2
            at = binom.cdf(k, n, q) if side == "low" else 1.0 - binom.cdf(k, n, q)
            assert abs(at - tail) < 1e-12, (n, side, mine, scipys)


def test_an_interval_does_not_import_scipy_stats() -> None:
    code = ("import sys; from recallwatch.stats._quantile import quantile_interval; "
            "i = quantile_interval(range(1, 201), 0.9); print(i.bounded, 'scipy.stats' in "
            "sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "False"]
