"""mSPRT checked by simulation (fixed seeds): under no difference, a team that looks every day
and stops at the first always-valid p below alpha is wrong at most alpha of the time (plus Monte
Carlo error), where the fixed-horizon z-test with the same daily peeking is wrong far more often;
the confidence sequence holds the true difference at every look with probability >= 1 - alpha."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from recallwatch.online.sequential import msprt

ALPHA = 0.05


def _daily_looks(sims: int, days: int, per_day: int, p_c: float, p_t: float,
                 seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative estimated difference and its estimated variance at each daily look: units are
    Bernoulli conversions, ``per_day`` new units per variant per day."""
    rng = np.random.default_rng(seed)
    c = rng.binomial(per_day, p_c, size=(sims, days)).cumsum(axis=1)
    t = rng.binomial(per_day, p_t, size=(sims, days)).cumsum(axis=1)
    n = per_day * np.arange(1, days + 1)
    r_c, r_t = c / n, t / n
    variance = r_c * (1 - r_c) / n + r_t * (1 - r_t) / n
    return r_t - r_c, variance


def _mc_error(rate: float, sims: int) -> float:
    return 3.0 * math.sqrt(rate * (1 - rate) / sims)


def _check(sims: int, seed: int) -> None:
    days, per_day, base = 30, 200, 0.3
    delta, variance = _daily_looks(sims, days, per_day, base, base, seed)
    tau2 = (0.05 * base) ** 2
    p, _, _ = msprt(delta, variance, tau2, ALPHA)
    false_positive = float(np.mean((p <= ALPHA).any(axis=1)))
    assert false_positive <= ALPHA + _mc_error(ALPHA, sims), false_positive
    # the fixed-horizon test peeked at daily inflates the error well past alpha
    z = np.abs(delta) / np.sqrt(variance)
    naive = float(np.mean((2 * stats.norm.sf(z) <= ALPHA).any(axis=1)))
    assert naive > 2 * ALPHA, naive
    # coverage of the confidence sequence under a real difference, at every look at once
    true = 0.02
    delta, variance = _daily_looks(sims, days, per_day, base, base + true, seed + 1)
    _, low, high = msprt(delta, variance, tau2, ALPHA)
    covered = float(np.mean(((low <= true) & (true <= high)).all(axis=1)))
    assert covered >= 1 - ALPHA - _mc_error(ALPHA, sims), covered


def test_daily_peeking_keeps_the_false_positive_rate() -> None:
    _check(2_000, 0)


@pytest.mark.slow
def test_daily_peeking_keeps_the_false_positive_rate_many_runs() -> None:
    _check(20_000, 1)


def test_degenerate_variance_is_p_one_and_unbounded() -> None:
    p, low, high = msprt(np.array([0.1, 0.1]), np.array([0.0, np.inf]), 0.01, ALPHA)
    assert p.tolist() == [1.0, 1.0] and np.isinf(low).all() and np.isinf(high).all()
    # a large standardised difference is significant, a small one is not
    p, _, _ = msprt(np.array([0.5, 0.001]), np.array([0.001, 0.001]), 0.01, ALPHA)
    assert p[0] < 1e-6 and p[1] == 1.0
