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


# -- with the spread of timing rounds --------------------------------------------------------------


def test_settings_whose_rounds_overlap_are_not_ranked_by_speed() -> None:
    from recallwatch.bench.frontier import pareto_mask_rounds

    recall = [0.90, 0.90, 0.80, 0.80, 0.70]
    rounds = [[100, 120, 110], [105, 115, 118],  # equal recall, overlapping: both stay
              [90, 125, 100],  # less recall and not faster (overlaps 0): dominated
              [200, 210, 205],  # less recall but faster in every round: stays
              [199, 230, 250]]  # overlaps 3, less recall: dominated by 3
    assert pareto_mask_rounds(recall, rounds).tolist() == [True, True, False, True, False]
    # one round each: a range is a point, and the frontier is the plain one
    single = [[q] for q in [9000, 5000, 4000, 2000, 1500, 100, 9000]]
    plain = [0.50, 0.80, 0.70, 0.95, 0.95, 0.99, 0.60]
    assert pareto_mask_rounds(plain, single).tolist() == [False, True, False, True, False, True,
                                                          True]


def test_one_slow_round_does_not_make_a_setting_slower() -> None:
    """The issue's case: faiss IVF timed once measured 34,803 QPS at nprobe=1 and 100,950 at
    nprobe=4 (a burst of load on the first). In rounds, the median ignores the burst, the
    ranges overlap, and nprobe=4 (more recall) is not called faster."""
    from recallwatch.bench.frontier import fastest_at_rounds, pareto_mask_rounds

    recall = [0.80, 0.95]
    rounds = [[34_803, 104_000, 101_500, 99_800, 103_200],  # nprobe=1
              [100_950, 98_400, 99_100, 97_700, 100_200]]  # nprobe=4
    assert pareto_mask_rounds(recall, rounds).tolist() == [False, True]
    best, tied = fastest_at_rounds(recall, rounds, 0.5)
    assert (best, tied) == (0, [1])  # nprobe=1 by its median, but indistinguishable
    assert fastest_at_rounds(recall, rounds, 0.9) == (1, [])
    assert fastest_at_rounds(recall, rounds, 0.99) == (None, [])


def test_rounds_rotate_the_settings_and_keep_each_measurement() -> None:
    from recallwatch.bench.measure import Timing, summarise_rounds, time_single_rounds

    class Engine:
        def __init__(self) -> None:
            self.query: dict[str, int] = {}

        def set_query_params(self, params: dict[str, int]) -> dict[str, int]:
            self.query = dict(params)
            return self.query

    seen: list[int] = []

    def timer(engine: Engine, queries: np.ndarray, k: int) -> tuple[Timing, np.ndarray]:
        nprobe = engine.query["nprobe"]
        seen.append(nprobe)
        wall = nprobe / 1000 * (1 + len(seen) / 100)  # given, not measured
        return Timing(10, wall, wall), np.full(10, wall / 10)

    settings = [{"nprobe": 1}, {"nprobe": 2}, {"nprobe": 4}]
    out = time_single_rounds(Engine(), settings, np.zeros((10, 4)), 10,  # type: ignore[arg-type]
                             rounds=4, timer=timer)
    assert seen == [1, 2, 4, 2, 4, 1, 4, 1, 2, 1, 2, 4]
    assert [len(x) for x in out] == [4, 4, 4]
    summary = summarise_rounds(out[0])
    assert summary.rounds == 4 and summary.qps == [t.qps for t, _ in out[0]]
    assert summary.qps_median == float(np.median(summary.qps))
    assert summary.p50["n"] == 40 and summary.p99 is None  # 40 calls cannot bound a p99
    assert summary.to_dict()["qps_range"] == [min(summary.qps), max(summary.qps)]


def test_rounds_out_of_range_are_refused() -> None:
    import pytest

    from recallwatch.bench.measure import time_single_rounds
    from recallwatch.errors import UsageError

    with pytest.raises(UsageError, match=r"timing rounds must be 1\.\.100, found 0"):
        time_single_rounds(None, [{}], np.zeros((1, 1)), 1, rounds=0)  # type: ignore[arg-type]


def test_the_table_gives_the_range_and_names_indistinguishable_settings() -> None:
    from recallwatch.bench.measure import Latency
    from recallwatch.bench.output import render_table, sweep_to_dict
    from recallwatch.bench.sweep import ConfigResult, SweepResult

    def config(nprobe: int, recall: float, rounds: list[float]) -> ConfigResult:
        qps = float(np.median(rounds))
        return ConfigResult(
            engine="faiss-ivf", label="ivf", build={"nlist": 64}, query={"nprobe": nprobe},
            k=10, recall={10: recall}, recall_ties={10: recall}, qps_single=qps, qps_batch=qps,
            latency=Latency(1.0, 1.0, 1.2, 1.5), cpu_s_per_1000_single=1.0,
            cpu_s_per_1000_batch=1.0, build_seconds=0.5, index_bytes=None,
            index_bytes_how=None, rss_delta_bytes=None, bytes_per_vector=None,
            timing={"rounds": len(rounds), "qps": rounds, "p50_ms": {}, "p99_ms": None})

    results = [config(1, 0.92, [34_803, 104_000, 101_500]),
               config(4, 0.95, [100_950, 98_400, 99_100]),
               config(16, 0.99, [20_000, 21_000, 19_000])]
    sweep = SweepResult("s", {"name": "d", "n": 10, "d": 4, "queries": 3, "metric": "ip",
                              "hash": "ab" * 32}, 10, {"batched_and_build": 1}, {}, {}, "x",
                        0.0, results, [0.9], "", "")
    table = render_table(sweep)
    assert "the median of 3 rounds, interleaved across a build's settings" in table
    assert "101,500 [34,803–104,000]" in table
    assert ("fastest at R@10 >= 0.9: ivf nlist=64 nprobe=1 — 101,500 [34,803–104,000] QPS-1 "
            "at R@10 0.9200, indistinguishable in speed from ivf nlist=64 nprobe=4 (99,100 "
            "[98,400–100,950] at R@10 0.9500): their rounds overlap;") in table
    p99 = [line.split()[-4] for line in table.splitlines() if line.startswith(("*", " "))
           and "nprobe=" in line]
    assert p99 == ["—", "—", "—"]  # no result's calls bound its p99
    doc = sweep_to_dict(sweep)
    assert doc["answers"]["fastest_at_indistinguishable"] == {"0.9": [1]}
    assert doc["answers"]["frontier"] == [1, 2]  # nprobe=1: less recall, not faster than 4
