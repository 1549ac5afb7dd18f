"""Recall against build time and against index size (ANN-Benchmarks' other plots): the files
are written, the costs behind them are the libraries' own, and each frontier is exactly the set
of configurations that no other beats on both axes."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from recallwatch.bench.datasets import dataset_from_spec
from recallwatch.bench.output import write_outputs
from recallwatch.bench.sweep import SweepConfig, SweepResult, load_sweep, run_sweep
from recallwatch.bench.tradeoffs import COSTS, cost_curve, plot_cost
from tests.bench.test_sweep import SWEEP, _write


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> SweepConfig:
    return load_sweep(_write(tmp_path_factory.mktemp("sweep"), SWEEP))


@pytest.fixture(scope="module")
def swept(config: SweepConfig) -> SweepResult:
    return run_sweep(config)


def _dominated(i: int, recall: list[float], cost: list[float]) -> bool:
    """Brute force: some other point has recall ≥ and cost ≤, one of them strictly."""
    return any(recall[j] >= recall[i] and cost[j] <= cost[i]
               and (recall[j] > recall[i] or cost[j] < cost[i])
               for j in range(len(recall)) if j != i)


def test_each_build_records_its_time_and_the_librarys_index_size(
        config: SweepConfig, swept: SweepResult) -> None:
    import faiss
    import hnswlib

    res = swept.results
    for label in ("faiss-ivf", "hnswlib"):  # one build, two query settings: one build's costs
        mine = [r for r in res if r.label == label]
        assert len(mine) == 2 and mine[0].build_seconds == mine[1].build_seconds > 0
        assert mine[0].index_bytes == mine[1].index_bytes
    base = np.ascontiguousarray(dataset_from_spec(config.dataset).base, dtype=np.float32)
    flat = faiss.IndexFlatIP(base.shape[1])
    flat.add(base)
    assert res[0].engine == "faiss-flat"
    assert res[0].index_bytes == len(faiss.serialize_index(flat))
    graph = hnswlib.Index(space="ip", dim=base.shape[1])
    graph.init_index(max_elements=base.shape[0], M=8, ef_construction=50, random_seed=100)
    graph.add_items(base, np.arange(base.shape[0]), num_threads=1)
    hnsw = next(r for r in res if r.label == "hnswlib")
    assert hnsw.index_bytes == graph.index_file_size()
    assert hnsw.bytes_per_vector == hnsw.index_bytes / base.shape[0]


def test_the_frontiers_are_the_undominated_points(swept: SweepResult) -> None:
    rng = np.random.default_rng(3)
    # the sweep's own points, then the same points with drawn costs and recalls full of ties
    trials = [swept] + [replace(swept, results=[
        replace(r, recall={**r.recall, swept.k: float(rng.integers(0, 4)) / 4},
                build_seconds=float(rng.integers(1, 4)), index_bytes=int(rng.integers(1, 4)))
        for r in swept.results]) for _ in range(30)]
    for sweep in trials:
        for cost in COSTS:
            curve = cost_curve(sweep, cost)
            assert curve.points == list(range(len(sweep.results))) and curve.left_out == 0
            value = [float(getattr(r, cost)) for r in sweep.results]
            recall = [r.recall[sweep.k] for r in sweep.results]
            undominated = {i for i in range(len(recall)) if not _dominated(i, recall, value)}
            front = set(curve.frontier)
            assert front <= undominated  # of identical points only the first is kept
            assert {(recall[i], value[i]) for i in front} == \
                {(recall[i], value[i]) for i in undominated}
            for label, idx in curve.frontier_by_engine.items():
                mine = [i for i, r in enumerate(sweep.results) if r.label == label]
                sub = [i for i in mine if not _dominated(mine.index(i), [recall[j] for j in mine],
                                                         [value[j] for j in mine])]
                assert {(recall[i], value[i]) for i in idx} == \
                    {(recall[i], value[i]) for i in sub}


def test_the_plots_are_written_beside_the_qps_plot_with_their_data(swept: SweepResult,
                                                                  tmp_path: Path) -> None:
    files = write_outputs(swept, tmp_path)
    assert [p.name for p in files][2:] == ["frontier.png", "build_time.png", "index_size.png"]
    for name in ("build_time.png", "index_size.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    doc = json.loads((tmp_path / "results.json").read_text())
    for cost in COSTS:
        curve = cost_curve(swept, cost)
        assert doc["answers"][f"{cost}_frontier"] == curve.frontier
        assert doc["answers"][f"{cost}_frontier_by_engine"] == curve.frontier_by_engine
        # the document holds the costs every frontier is read from, point by point
        assert [r[cost] for r in doc["results"]] == [getattr(r, cost) for r in swept.results]


def test_configurations_without_an_index_size_are_left_out_and_said(swept: SweepResult,
                                                                    tmp_path: Path) -> None:
    store_like = replace(swept, results=[replace(r, index_bytes=None) if r.label == "hnswlib"
                                         else r for r in swept.results])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curve = plot_cost(store_like, "index_bytes", tmp_path / "size.png")
    assert curve.left_out == 2 and "hnswlib" not in curve.frontier_by_engine
    assert all(store_like.results[i].label != "hnswlib" for i in curve.points)
    assert (tmp_path / "size.png").read_bytes()[:4] == b"\x89PNG"
