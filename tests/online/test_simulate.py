"""The simulator is seeded and its users follow the stated click models."""

from __future__ import annotations

import numpy as np

from recallwatch.online.simulate import (
    ATTRACTIVENESS,
    make_collection,
    simulate_ab_log,
    simulate_batches,
    simulate_clicks,
    simulate_log,
)


def test_same_seed_same_log_other_seed_other_log() -> None:
    col = make_collection(20, 12, seed=1)
    a = list(simulate_log(col, 200, seed=3))
    assert a == list(simulate_log(col, 200, seed=3))
    assert a != list(simulate_log(col, 200, seed=4))
    r = col.ranking(1.0, seed=0)
    assert list(simulate_ab_log(col, r, r, 50, seed=1)) == list(simulate_ab_log(col, r, r, 50,
                                                                                seed=1))


def test_pbm_users_click_with_the_stated_probabilities() -> None:
    rng = np.random.default_rng(0)
    grades = np.tile(np.array([[3, 2, 1, 0]]), (200_000, 1))
    ctr = simulate_clicks(grades, rng, user="pbm").mean(axis=0)
    expected = ATTRACTIVENESS[[3, 2, 1, 0]] / np.arange(1, 5)
    assert np.allclose(ctr, expected, atol=0.005)


def test_cascade_users_stop_after_a_satisfying_click() -> None:
    rng = np.random.default_rng(0)
    grades = np.full((100_000, 5), 3)
    clicks = simulate_clicks(grades, rng, user="cascade", persistence=1.0)
    # P(click at rank 1) = 0.85; reaching rank 2 needs no satisfaction at rank 1
    assert abs(clicks[:, 0].mean() - 0.85) < 0.01
    reach2 = 1 - 0.85 * 0.8
    assert abs(clicks[:, 1].mean() - reach2 * 0.85) < 0.01


def test_batches_are_valid_encoded_impressions() -> None:
    col = make_collection(10, 15, seed=2)
    total = 0
    for b in simulate_batches(col, 2500, k=10, seed=1, batch_size=1000):
        total += len(b.queries)
        assert b.docs.shape == (len(b.queries), 10)
        assert np.all(b.docs // 15 == b.queries[:, None])  # documents of the query shown
        assert all(len(set(row)) == 10 for row in b.docs.tolist())
    assert total == 2500
