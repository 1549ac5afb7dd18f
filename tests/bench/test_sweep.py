from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from recallwatch.bench.output import answers, render_table, write_outputs
from recallwatch.bench.sweep import load_sweep, run_sweep
from recallwatch.errors import InputError

SWEEP = """\
name: tiny
dataset:
  synthetic: {n: 2000, dim: 16, topics: 10, queries: 40, seed: 1}
k: 10
recall_at: [1, 10, 100]
timing: {warmup: 2}
targets: [0.9, 0.999]
cache: truth-cache
engines:
  - engine: faiss-flat
  - engine: faiss-ivf
    build: {nlist: 32}
    query: {nprobe: [1, 32]}
  - engine: hnswlib
    build: {M: 8, ef_construction: 50}
    query: {ef: [10, 200]}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_sweep_measures_every_configuration(tmp_path: Path) -> None:
    config = load_sweep(_write(tmp_path, SWEEP))
    assert [len(e.queries) for e in config.engines] == [1, 2, 2]
    result = run_sweep(config)
    assert len(result.results) == 5
    assert result.threads["exact_truth"] == result.threads["batched_and_build"] == config.threads
    flat = result.results[0]
    assert flat.recall == {1: 1.0, 10: 1.0, 100: 1.0} and flat.recall_ties[10] == 1.0
    for r in result.results:
        assert r.qps_single > 0 and r.qps_batch > 0 and r.build_seconds >= 0
        assert r.latency.p50_ms <= r.latency.p95_ms <= r.latency.p99_ms
        assert r.index_bytes and r.bytes_per_vector and r.index_bytes_how
    ivf = [r for r in result.results if r.engine == "faiss-ivf"]
    assert ivf[0].recall[10] < ivf[1].recall[10] == 1.0
    assert (tmp_path / "truth-cache").is_dir()  # exact truth cached beside the sweep file
    ans = answers(result)
    assert ans.fastest[0.9] is not None
    best = result.results[ans.fastest[0.9]]
    assert best.recall[10] >= 0.9
    assert all(r.qps_single <= best.qps_single for r in result.results if r.recall[10] >= 0.9)
    table = render_table(result)
    assert "n=2000  d=16  queries=40  metric=ip  k=10" in table
    assert "fastest at R@10 >= 0.9:" in table


def test_outputs_are_json_csv_and_a_plot(tmp_path: Path) -> None:
    result = run_sweep(load_sweep(_write(tmp_path, SWEEP)))
    files = write_outputs(result, tmp_path / "out")
    assert sorted(p.name for p in files) == ["build_time.png", "frontier.png", "index_size.png",
                                             "results.csv", "results.json"]
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["schema_version"] == 1 and doc["dataset"]["hash"] == result.dataset["hash"]
    assert len(doc["results"]) == 5 and doc["answers"]["frontier"]
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").read_text().splitlines()))
    assert len(rows) == 5 and {"recall@10", "qps_single", "dataset", "on_frontier"} <= set(rows[0])
    assert (tmp_path / "out" / "frontier.png").read_bytes()[:4] == b"\x89PNG"


def test_unknown_key_names_file_line_and_suggestion(tmp_path: Path) -> None:
    path = _write(tmp_path, SWEEP.replace("  - engine: faiss-flat\n",
                                          "  - engine: faiss-flat\n    querry: {}\n"))
    with pytest.raises(InputError, match=r"sweep.yaml:10: record 'engines\[0\]': field 'querry': "
                                         r"unknown key \(did you mean 'query'\?\)"):
        load_sweep(path)


def test_unknown_engine_lists_the_registered_ones(tmp_path: Path) -> None:
    path = _write(tmp_path, SWEEP.replace("engine: hnswlib", "engine: annoy"))
    with pytest.raises(InputError, match=r"field 'engine': expected one of faiss, .*found 'annoy'"):
        load_sweep(path)


def test_bad_target_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"field 'targets': expected recall targets in \(0, 1\]"):
        load_sweep(_write(tmp_path, SWEEP.replace("[0.9, 0.999]", "[95]")))
