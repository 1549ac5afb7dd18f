"""What ``recallwatch bench`` costs over the same searches made through faiss directly.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_overhead_bench.py [--rounds 5]
        [--n 20000] [--dim 64] [--queries 1000] [--dir DIR] [--baseline CHECKOUT]

A seeded base and query set (``--n`` x ``--dim`` and ``--queries`` x ``--dim`` float32, inner
product) are written once as ``.npy`` files, with a sweep file over them: faiss-flat, faiss-ivf
(nlist 128; nprobe 1, 8, 32) and faiss-hnsw (M 16, efConstruction 100; efSearch 16, 64), k 10,
recall at 1, 10 and 100, one thread, 10 warm-up queries, one batch. Then, as fresh processes
(wall time, CPU time and peak RSS from ``wait4``), in interleaved rounds:

  faiss      a Python script that does the same work with faiss and numpy alone: reads the two
             files, exact truth (IndexFlatIP, top 100), and for every configuration builds the
             index (index_factory, train, add), sets its query parameter, searches the queries
             one at a time (each timed, after the warm-up), then all at once, then again at
             depths 1 and 100, computes recall at each depth and serialises the index for its
             size
  bench      ``recallwatch bench SWEEP`` (the table on stdout)
  bench-out  ``recallwatch bench SWEEP --out DIR``: results.json, results.csv and the three
             figures (frontier.png, build_time.png, index_size.png)
  before     (with --baseline) ``bench-out`` with another checkout's code

Ratios are taken within each round (bench / faiss, bench-out / faiss), medians over the rounds.
Threads are pinned to one through the environment (``OMP_NUM_THREADS`` and the BLAS variables),
as the sweep's ``threads: 1`` pins faiss.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CLI = ("import sys; from recallwatch.__main__ import main; sys.argv[0] = 'recallwatch'; "
       "sys.exit(main())")
SWEEP = """name: overhead
dataset:
  base: base.npy
  queries: queries.npy
  metric: ip
k: 10
recall_at: [1, 10, 100]
threads: 1
timing: {warmup: 10, batch_repeats: 1}
targets: [0.9]
engines:
  - engine: faiss-flat
  - engine: faiss-ivf
    build: {nlist: 128}
    query: {nprobe: [1, 8, 32]}
  - engine: faiss-hnsw
    build: {M: 16, efConstruction: 100}
    query: {efSearch: [16, 64]}
"""
DIRECT = r"""
import sys, time
import faiss, numpy as np
faiss.omp_set_num_threads(1)
folder = sys.argv[1]
xb, xq = np.load(folder + "/base.npy"), np.load(folder + "/queries.npy")
k, depths, warmup = 10, (1, 10, 100), 10
flat = faiss.IndexFlatIP(xb.shape[1]); flat.add(xb)
truth = flat.search(xq, max(depths))[1]
configs = [("Flat", None, [None]), ("IVF128,Flat", "nprobe", [1, 8, 32]),
           ("HNSW16,Flat", "efSearch", [16, 64])]
for factory, param, values in configs:
    index = faiss.index_factory(xb.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if factory.startswith("HNSW"):
        index.hnsw.efConstruction = 100
    t0 = time.perf_counter()
    if not index.is_trained:
        index.train(xb)
    index.add(xb)
    build = time.perf_counter() - t0
    size = faiss.serialize_index(index).size
    for value in values:
        if param is not None:
            faiss.ParameterSpace().set_index_parameter(index, param, value)
        for q in xq[:warmup]:
            index.search(q[None, :], k)
        each = np.empty(len(xq))
        for i, q in enumerate(xq):
            s = time.perf_counter(); index.search(q[None, :], k); each[i] = time.perf_counter() - s
        found = {k: index.search(xq, k)[1]}
        for d in depths:
            found.setdefault(d, index.search(xq, d)[1])
        recall = {d: float((found[d][:, :, None] == truth[:, None, :d]).any(axis=2).mean())
                  for d in depths}
        print(factory, value, f"R@10 {recall[10]:.4f} QPS {len(xq) / each.sum():,.0f}",
              f"p50 {np.percentile(each, 50) * 1e3:.3f} ms build {build:.2f} s {size} B")
"""


def child(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            raise SystemExit(f"{argv[:4]} exited {code}: {err.read().decode()[-2000:]}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                "rss_mb": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "rw-bench-overhead")
    parser.add_argument("--baseline", type=Path, help="another checkout to time as 'before'")
    args = parser.parse_args()
    folder = args.dir
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    np.save(folder / "base.npy", rng.standard_normal((args.n, args.dim), dtype=np.float32))
    np.save(folder / "queries.npy",
            rng.standard_normal((args.queries, args.dim), dtype=np.float32))
    sweep = folder / "sweep.yaml"
    sweep.write_text(SWEEP)
    py = sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "faiss": ([py, "-c", DIRECT, str(folder)], env),
        "bench": ([py, "-c", CLI, "bench", str(sweep)], env),
        "bench-out": ([py, "-c", CLI, "bench", str(sweep), "--out", str(folder / "out")], env),
    }
    if args.baseline is not None:
        commands["before"] = ([py, "-P", "-c", CLI, "bench", str(sweep), "--out",
                               str(folder / "out-before")],
                              {**env, "PYTHONPATH": str(args.baseline.resolve())})
    for argv, e in commands.values():  # warm: bytecode, page cache, matplotlib's font cache
        child(argv, e)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    names = list(commands)
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name in names[r % len(names):] + names[:r % len(names)]:
            argv, e = commands[name]
            runs[name].append(child(argv, e))
    loads.append(os.getloadavg()[0])
    report(runs, loads, args)


def report(runs: dict[str, list[dict[str, Any]]], loads: list[float], args: Any) -> None:
    from recallwatch.bench.sweep import machine_info

    med = statistics.median
    m = machine_info(("faiss", "matplotlib"))
    print(f"{args.n:,} x {args.dim} base, {args.queries:,} queries; {args.rounds} interleaved "
          f"rounds, load average {min(loads):.1f}-{max(loads):.1f} on {m['cpus']} CPUs "
          f"({m['processor']}), Python {m['python']}, faiss {m['faiss']}, matplotlib "
          f"{m['matplotlib']}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    for name, rs in runs.items():
        print(f"  {name:10s} wall median {med(r['wall'] for r in rs):6.2f} s (best "
              f"{min(r['wall'] for r in rs):.2f})  CPU median {med(r['cpu'] for r in rs):5.2f} s"
              f"  peak RSS {max(r['rss_mb'] for r in rs):4.0f} MB")
    for name in runs:
        if name == "faiss":
            continue
        ratios = sorted(b["wall"] / f["wall"] for b, f in zip(runs[name], runs["faiss"]))
        cpu = sorted(b["cpu"] / f["cpu"] for b, f in zip(runs[name], runs["faiss"]))
        print(f"  {name} / faiss: wall median {med(ratios):.2f}x (range {ratios[0]:.2f}-"
              f"{ratios[-1]:.2f}), CPU median {med(cpu):.2f}x")


if __name__ == "__main__":
    main()
