from __future__ import annotations

import numpy as np

from recallwatch.bench.frontier import fastest_at, pareto_mask


def test_pareto_mask_on_constructed_points() -> None:
    recall = [0.50, 0.80, 0.70, 0.95, 0.95, 0.99, 0.60]
    qps = [9000, 5000, 4000, 2000, 1500, 100, 9000]
    # 2 is beaten by 1; 4 by 3; 0 by 6 (same speed, more recall)
    assert pareto_mask(recall, qps).tolist() == [False, True, False, True, False, True, True]


def test_identical_points_keep_only_the_first() -> None:
    assert pareto_mask([0.9, 0.9], [10, 10]).tolist() == [True, False]


def test_every_dominated_point_has_a_frontier_point_above_and_right() -> None:
    rng = np.random.default_rng(0)
    r, q = rng.random(200), rng.random(200) * 1000
    mask = pareto_mask(r, q)
    for i in np.flatnonzero(~mask):
        assert np.any((r[mask] >= r[i]) & (q[mask] >= q[i]))
    for i in np.flatnonzero(mask):
        assert not np.any((r >= r[i]) & (q >= q[i]) & ((r > r[i]) | (q > q[i])))


def test_fastest_at_a_recall_target() -> None:
    recall = [0.50, 0.96, 0.97, 0.99]
    qps = [9000, 3000, 3000, 100]
    assert fastest_at(recall, qps, 0.95) == 2  # equally fast: the one with more recall
    assert fastest_at(recall, qps, 0.99) == 3
    assert fastest_at(recall, qps, 0.999) is None
