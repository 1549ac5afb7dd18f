"""The index build of the 100M plan, per shard on Ray: one process against 1 and 2 Ray workers.

The rows are cut into ``--shards`` parts; each part is written to a LanceDB table of its own and
its ANN index (the adapter's default, ``IVF_HNSW_SQ``, built by ``LanceStore.build_index``, the
rule every recallwatch index is built with) is built there. One process does every part in turn;
on Ray, one task per part does it, at most W at once (a local Ray of W CPUs, started before the
clock starts). The figure is rows indexed per second over the whole set, write included, and the
same for the build alone; the load average is recorded before and after, since the machine may
be shared.

    PYTHONPATH=. .venv/bin/python benchmarks/index_build_bench.py --rows 40000 --dim 256 \\
        --shards 2 --workers 1 2 --out benchmarks/results/index_build_bench.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.bench.datasets import synthetic
from recallwatch.bench.sweep import machine_info
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore


def build_part(directory: str, first: int, vectors: np.ndarray) -> dict[str, float]:
    """Write one part to a table of its own and build its index; seconds of each step."""
    store = LanceStore.open(f"lancedb://{directory}?table=chunks&index_threshold=1000000000",
                            create=True)
    try:
        t0 = time.perf_counter()
        store.upsert([Chunk(id=f"c{first + i:09d}", text="") for i in range(len(vectors))],
                     vectors)
        t1 = time.perf_counter()
        store.build_index()
        t2 = time.perf_counter()
        assert store.index_state() is not None, "no index was built"
    finally:
        store.close()
    return {"rows": float(len(vectors)), "write_s": t1 - t0, "build_s": t2 - t1}


def _parts(rows: int, shards: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, rows, shards + 1).astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges)]


def one_process(base: np.ndarray, shards: int, work: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    parts = [build_part(str(work / f"one-{i}"), a, base[a:b])
             for i, (a, b) in enumerate(_parts(len(base), shards))]
    return {"path": "one process", "workers": 0, "wall_s": time.perf_counter() - t0,
            "parts": parts}


def on_ray(base: np.ndarray, shards: int, workers: int, work: Path) -> dict[str, Any]:
    from recallwatch.scale.ray_engine import ray_session

    with ray_session(None, workers) as ray:
        task = ray.remote(num_cpus=1)(build_part)
        ray.get(ray.remote(num_cpus=1)(lambda: 0).remote())  # a worker up before the clock
        t0 = time.perf_counter()
        refs = [task.remote(str(work / f"ray{workers}-{i}"), a, base[a:b])
                for i, (a, b) in enumerate(_parts(len(base), shards))]
        parts = ray.get(refs)
        wall = time.perf_counter() - t0
    return {"path": f"Ray, {workers} worker(s)", "workers": workers, "wall_s": wall,
            "parts": parts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=40_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    base = synthetic(args.rows, args.dim, topics=40, queries=1, seed=27).base
    work = Path(tempfile.mkdtemp(prefix="rw-build-", dir="/tmp"))
    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_before = list(os.getloadavg())
    try:
        runs = [one_process(base, args.shards, work)]
        runs += [on_ray(base, args.shards, w, work) for w in args.workers]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = list(os.getloadavg())
    print(f"{args.rows:,} rows × {args.dim} dimensions in {args.shards} parts, LanceDB "
          f"IVF_HNSW_SQ per part; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after ({os.cpu_count()} CPUs)")
    print(f"{'path':<22}{'wall s':>9}{'rows/s':>10}{'build s (sum)':>15}{'write s (sum)':>15}"
          f"{'ratio':>8}")
    first = runs[0]["wall_s"]
    for run in runs:
        build = sum(p["build_s"] for p in run["parts"])
        write = sum(p["write_s"] for p in run["parts"])
        run["rows_per_s"] = args.rows / run["wall_s"]
        print(f"{run['path']:<22}{run['wall_s']:>9.1f}{run['rows_per_s']:>10,.0f}"
              f"{build:>15.1f}{write:>15.1f}{first / run['wall_s']:>8.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "started": started, "rows": args.rows, "dim": args.dim, "shards": args.shards,
            "load_average_before": load_before, "load_average_after": load_after,
            "machine": machine_info(("lancedb", "lance", "ray")), "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
