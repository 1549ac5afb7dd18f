"""``bench`` on Ray: each engine configuration a Ray task, the same results and frontier as one
process (timings aside); recallwatch's own errors from a task reach the user as they are; a
successful run on Ray prints recallwatch's progress only. One local Ray (2 CPUs) serves the
module; the command-line runs, which start Ray of their own, are slow."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from recallwatch.bench.output import answers, sweep_to_dict
from recallwatch.bench.sweep import SweepResult, load_sweep, run_sweep
from recallwatch.errors import StoreError, UsageError

ROOT = Path(__file__).resolve().parents[2]
RECALLWATCH = str(Path(sys.executable).with_name("recallwatch"))

# deterministic builds (one thread): faiss's k-means has a fixed seed, hnswlib a fixed level seed
SWEEP = """\
name: on-ray
dataset:
  synthetic: {n: 3000, dim: 24, topics: 12, queries: 50, seed: 5}
k: 10
recall_at: [1, 10, 50]
threads: 1
timing: {warmup: 2, single_queries: 20}
targets: [0.5, 0.9, 0.99]
engines:
  - engine: faiss-flat
  - engine: faiss-ivf
    build: {nlist: [16, 48]}
    query: {nprobe: [1, 3, 16]}
  - engine: faiss-hnsw
    build: {M: 8, efConstruction: 40}
    query: {efSearch: [8, 64]}
  - engine: hnswlib
    build: {M: 6, ef_construction: 30}
    query: {ef: [10, 100]}
"""

# what a point's measurement gives besides its timings
_TIMINGS = ("qps_single", "qps_batch", "latency", "cpu_s_per_1000_single",
            "cpu_s_per_1000_batch", "build_seconds", "rss_delta_bytes", "load")


def _sweep(tmp: Path, text: str = SWEEP) -> Path:
    path = tmp / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _without_timings(result: SweepResult) -> list[dict[str, Any]]:
    return strip_timings([r.to_dict() for r in result.results])


def strip_timings(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results as a JSON document holds them, without what the clock measured."""
    return [{k: v for k, v in r.items() if k not in _TIMINGS} for r in results]


def _on_ray(config: Any, **kw: Any) -> SweepResult:
    from functools import partial

    from recallwatch.scale.ray_bench import RayPoints
    from recallwatch.scale.ray_engine import ground_truth

    return run_sweep(config, compute_truth=partial(ground_truth, workers=2),
                     run_points=RayPoints(workers=2), **kw)


def test_a_sweep_on_ray_gives_the_single_process_results_and_frontier(
        local_ray: ModuleType, tmp_path: Path) -> None:
    config = load_sweep(_sweep(tmp_path))
    one = run_sweep(config)
    seen: list[str] = []
    spread = _on_ray(config, on_result=lambda r: seen.append(f"{r.label} {r.params}"))
    # every configuration, in the sweep's order, reported as it arrived
    assert seen == [f"{r.label} {r.params}" for r in one.results]
    assert len(one.results) == 1 + 2 * 3 + 2 + 2
    assert _without_timings(spread) == _without_timings(one)  # recalls, index bytes, parameters
    assert spread.dataset == one.dataset and spread.config_hash == one.config_hash
    # the recalls are not trivial: the grid spans low to full recall
    assert min(r.recall[10] for r in one.results) < 0.6
    assert max(r.recall[10] for r in one.results) == 1.0
    # the frontier and the chosen points are a function of recall and QPS alone: with the same
    # QPS, the Ray results choose the same points as one process
    timed = replace(spread, results=[replace(r, qps_single=o.qps_single,
                                             cpu_s_per_1000_single=o.cpu_s_per_1000_single)
                                     for r, o in zip(spread.results, one.results, strict=True)])
    assert answers(timed) == answers(one)
    # and the Ray run's own frontier is drawn from its own timings, in the same document
    doc = sweep_to_dict(spread)
    assert doc["answers"]["frontier"] == answers(spread).frontier


def test_a_point_needing_more_cpus_than_any_node_has_is_refused(local_ray: ModuleType,
                                                                tmp_path: Path) -> None:
    config = replace(load_sweep(_sweep(tmp_path)), threads=64)
    with pytest.raises(UsageError, match=r"threads \(64\) exceed the CPUs of every node of "
                       r"the Ray cluster \(at most 2 on one node\): give --threads 2 or fewer"):
        _on_ray(config)


def test_a_recallwatch_error_in_a_task_reaches_the_user_as_it_is(local_ray: ModuleType,
                                                                 tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    text = SWEEP.split("engines:")[0] + (
        f"engines:\n  - engine: store\n    build: {{uri: 'lancedb://{missing}?table=t', "
        "populate: false}\n")
    config = load_sweep(_sweep(tmp_path, text))
    with pytest.raises(StoreError) as local:
        run_sweep(config)
    with pytest.raises(StoreError) as remote:
        _on_ray(config)
    assert str(remote.value) == str(local.value)
    assert "Traceback" not in str(remote.value) and "RayTaskError" not in str(remote.value)


# -- the command line on a Ray it starts (slow: starting Ray takes tens of seconds here) -------

_PROGRESS = re.compile(r"^\S+ .*: R@10 \d\.\d{4}, [\d,]+ QPS-1$")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=900, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "RECALLWATCH_CACHE_DIR": str(cwd / "cache"),
                               "RAY_USAGE_STATS_ENABLED": "0"}, check=False)


@pytest.mark.slow
def test_bench_on_ray_prints_recallwatch_progress_only(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path)
    out = _run([RECALLWATCH, "bench", str(sweep), "--engine", "ray", "--workers", "2",
                "--format", "json", "--out", str(tmp_path / "out")], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stderr.splitlines()
    progress = [ln for ln in lines if not ln.startswith("wrote ")]
    assert len(progress) == 11 and all(_PROGRESS.match(ln) for ln in progress), out.stderr
    assert [ln for ln in lines if ln.startswith("wrote ")] == [
        f"wrote {tmp_path / 'out' / name}" for name in
        ("results.json", "results.csv", "frontier.png", "build_time.png", "index_size.png")]
    spread = json.loads(out.stdout)
    one = run_sweep(load_sweep(sweep))
    assert strip_timings(spread["results"]) == json.loads(json.dumps(_without_timings(one)))


@pytest.mark.slow
def test_ingest_on_ray_prints_nothing_of_ray(tmp_path: Path) -> None:
    """Ray Data's actors (restarts off: Ray printed an error line about their arguments on every
    run), its notes on progress bars and finished executions: none reaches the terminal."""
    corpus = tmp_path / "corpus.jsonl"
    lines = (ROOT / "examples" / "kb" / "corpus_v1.jsonl").read_text(encoding="utf-8")
    corpus.write_text("\n".join(lines.splitlines()[:8]) + "\n", encoding="utf-8")
    out = _run([RECALLWATCH, "ingest", str(corpus), "--store",
                f"lancedb://{tmp_path / 'kb'}?table=chunks", "--embedder",
                "use-multilingual?batch_size=4", "--batch-size", "4", "--engine", "ray",
                "--workers", "2", "--no-progress"], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr == ""
    assert out.stdout.startswith(f"Ingested {corpus} into lancedb://")
