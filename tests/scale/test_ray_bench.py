"""``bench`` on Ray through the command line, which starts a Ray of its own (slow: tens of
seconds on a loaded machine): the results of one process, and recallwatch's progress only on the
terminal, for ``bench`` and for ``ingest``; and the driver of a sweep on Ray, which allocates
none of the base (slow: a base of 51 MB). The sweep used here and in test_ray_engine.py (which
runs it on the module's local Ray, in the default suite) and test_ray_cluster.py (two nodes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from recallwatch.bench.sweep import SweepResult, load_sweep, run_sweep

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
            "cpu_s_per_1000_batch", "build_seconds", "rss_delta_bytes", "load", "timing")


def sweep_file(tmp: Path, text: str = SWEEP) -> Path:
    path = tmp / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def without_timings(result: SweepResult) -> list[dict[str, Any]]:
    return strip_timings([r.to_dict() for r in result.results])


def strip_timings(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results as a JSON document holds them, without what the clock measured."""
    return [{k: v for k, v in r.items() if k not in _TIMINGS} for r in results]


def on_ray(config: Any, **kw: Any) -> SweepResult:
    """The sweep as ``bench --engine ray`` runs it, on the connected Ray."""
    from recallwatch.scale.ray_bench import sweep_on_ray

    return sweep_on_ray(config, workers=2, **kw)


# -- the command line on a Ray it starts (slow: starting Ray takes tens of seconds here) -------

PROGRESS = re.compile(r"^\S+ .*: R@10 \d\.\d{4}, [\d,]+ QPS-1 \([\d,]+–[\d,]+ over \d+ rounds\)$")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=900, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "RECALLWATCH_CACHE_DIR": str(cwd / "cache"),
                               "RAY_USAGE_STATS_ENABLED": "0"}, check=False)


@pytest.mark.slow
def test_bench_on_ray_prints_recallwatch_progress_only(tmp_path: Path) -> None:
    sweep = sweep_file(tmp_path)
    out = _run([RECALLWATCH, "bench", str(sweep), "--engine", "ray", "--workers", "2",
                "--format", "json", "--out-dir", str(tmp_path / "out")], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stderr.splitlines()
    progress = [ln for ln in lines if not ln.startswith("wrote ")]
    assert len(progress) == 11 and all(PROGRESS.match(ln) for ln in progress), out.stderr
    assert [ln for ln in lines if ln.startswith("wrote ")] == [
        f"wrote {tmp_path / 'out' / name}" for name in
        ("results.json", "results.csv", "frontier.png", "build_time.png", "index_size.png")]
    spread = json.loads(out.stdout)
    one = run_sweep(load_sweep(sweep))
    assert strip_timings(spread["results"]) == json.loads(json.dumps(without_timings(one)))


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


# what the driver allocates, seen by tracemalloc (numpy reports its arrays to it)
_BIG = """\
name: driver-memory
dataset:
  synthetic: {n: 200000, dim: 64, topics: 20, queries: 40, seed: 1}
k: 10
recall_at: [1, 10]
threads: 1
timing: {warmup: 1, single_queries: 10}
engines:
  - engine: faiss-flat
  - engine: faiss-ivf
    build: {nlist: 64}
    query: {nprobe: [2, 8]}
"""


@pytest.mark.slow
def test_the_driver_of_a_ray_sweep_never_allocates_the_base(
        local_ray: Any, tmp_path: Path) -> None:
    """A 51.2 MB base: one process allocates at least that much more than it held before, while
    the Ray driver's peak of traced allocations stays within a tenth of it above what it held
    before (about 1 MB here: a wide margin), with the same results. A small sweep on Ray first
    imports what the Ray path imports, so that the measurement sees the sweep alone."""
    import tracemalloc

    config = load_sweep(sweep_file(tmp_path, _BIG))
    on_ray(load_sweep(sweep_file(tmp_path, _BIG.replace("n: 200000", "n: 2000"))))
    base_bytes = 200_000 * 64 * 4
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        one = run_sweep(config)
        local_growth = tracemalloc.get_traced_memory()[1] - before
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        spread = on_ray(config)
        ray_growth = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert local_growth >= base_bytes  # the measurement sees the base where it is held
    assert ray_growth < base_bytes / 10, ray_growth
    assert without_timings(spread) == without_timings(one)
    assert spread.dataset == one.dataset
