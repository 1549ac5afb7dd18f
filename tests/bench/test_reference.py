from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from recallwatch.bench.reference import (
    ExperimentConfig,
    drift_experiment,
    figure_sizes,
    metrics_demo,
    run_experiments,
)

FAST = ExperimentConfig(n=6000, dim=64, queries=100, nlist=64, nprobe=4,
                        latency_sizes=[2000, 8000, 32000], latency_queries=100,
                        rescore_depths=[10, 50, 200, 1000])


def test_metrics_demo_reproduces_the_chapter() -> None:
    demo = metrics_demo()
    assert {name: m["recall@10"] for name, m in demo.items()} == {
        "ideal": 1.0, "dispersed": 1.0, "late": 1.0}
    assert demo["late"]["MRR"] == pytest.approx(0.2)
    assert demo["dispersed"]["nDCG@10"] == pytest.approx(0.83, abs=0.005)
    assert demo["late"]["nDCG@10"] == pytest.approx(0.51, abs=0.01)


def test_drift_drops_recall_and_retraining_recovers_it() -> None:
    stages = [s["recall@10"] for s in drift_experiment(FAST)["stages"]]
    assert stages[0] > stages[1] > stages[2]  # each wave of new topics in old cells hurts
    assert stages[3] > stages[2] + 0.05  # retraining the k-means recovers


def test_experiments_write_every_file_with_hashes(tmp_path: Path) -> None:
    res = run_experiments(tmp_path, FAST)
    names = {p.name for p in tmp_path.iterdir()}
    assert {f"fig18_{n}" for n in ("1_metrics.png", "2_recall_by_k.png", "3_latency_vs_n.png",
                                   "5_drift.png", "6_quantization.png",
                                   "7_binary_rescoring.png")} <= names
    assert {"table18_1_quantization.md", "table18_2_indicators.md", "evaluation_report.txt",
            "experiments.json"} <= names
    stored = json.loads((tmp_path / "experiments.json").read_text())
    assert stored["config"]["seed"] == FAST.seed and len(stored["config_hash"]) == 64
    assert len(stored["inputs"]["collection_hash"]) == 64
    assert 0.5 < res["latency_vs_n"]["loglog_slope"] < 1.6  # brute force: linear in N
    assert "| Index health |" in (tmp_path / "table18_2_indicators.md").read_text()
    assert (tmp_path / "evaluation_report.txt").read_text().startswith("recall@10:")


def test_each_file_says_the_size_it_was_made_at(tmp_path: Path) -> None:
    cfg = replace(FAST, n=5000, queries=40, latency_sizes=[1000, 2000], latency_queries=20)
    res = run_experiments(tmp_path, cfg)
    sizes = json.loads((tmp_path / "experiments.json").read_text())["sizes"]
    assert sizes == figure_sizes(cfg) and set(sizes) == set(res["files"])
    # what each says is the size of the data the experiment recorded
    q = res["quantization"]
    assert (q["n"], q["d"], q["nq"]) == (5000, 64, 40)
    assert sizes["fig18_6_quantization.png"] == "n=5,000 vectors × 64 dimensions, 40 queries"
    stages = [s["n"] for s in res["drift"]["stages"]]
    assert stages == [5000, 7500, 10000, 10000]
    assert sizes["fig18_5_drift.png"].startswith(
        "n=5,000 vectors on 40 old topics, then 2 wave(s) of 2,500 on 30 new topics each, "
        "n=10,000 at the end, × 64 dimensions")
    assert res["latency_vs_n"]["n"] == [1000, 2000]
    assert sizes["fig18_3_latency_vs_n.png"].startswith("n=1,000, 2,000 vectors × 64 dimensions")
    assert "Made at n=5,000 vectors" in (tmp_path / "table18_1_quantization.md").read_text()


def test_experiments_repeat_exactly(tmp_path: Path) -> None:
    first = drift_experiment(FAST)
    assert drift_experiment(FAST) == first
