"""Memory per unit and time of each step at two sizes a decade apart, against the goals.

    .venv/bin/python benchmarks/unit_cost_bench.py
        [--only gate|eval|latency|history|ingest|truth ...]
        [--gate-queries 1000 10000] [--gate-base 20000] [--dim 512]
        [--eval-queries 10000 100000] [--eval-depth 100] [--ingest-rows 10000 100000]
        [--ingest-store-options index_threshold=1000000]
        [--ingest-engine precomputed|local|ray ...] [--ingest-ray-workers 2] [--ingest-window N]
        [--truth-base 100000 1000000] [--truth-dim 128] [--truth-queries 500] [--truth-k 10]
        [--truth-threads N] [--out FILE.json]

Each step runs in a fresh Python process per size (``--worker``), so its peak resident memory
(``ru_maxrss``) is its own: imports, inputs and all. The memory **per unit** is the growth of the
peak between the two sizes divided by the growth of the work (``(peak₂ − peak₁) / (n₂ − n₁)``):
what one more golden query or run line costs, without the fixed cost of starting Python and
importing the libraries. Time is the step's wall time in that process.

1. **gate** (goal ≤ 25 KB per golden query): a LanceDB store of ``--gate-base`` seeded
   ``--dim``-d vectors without an ANN index (every search a full scan) and a golden set of
   ``--gate-queries`` queries, each the vector of one stored row plus noise, expecting that row;
   ``run_gate`` with the default policy and latency sample, then its JSON report written to a
   file as ``gate --format json`` prints it.
2. **eval** (goal ≤ 60 B per run line): ``recallwatch eval``'s path (``evaluate_file``: the run
   file in blocks of whole queries) on a seeded qrels and run of ``--eval-queries`` queries ×
   ``--eval-depth`` results, measures ``nDCG@10 R@100 RR AP P@10``.
3. **latency** (goal: the latency sample ≤ 10 % of a gate's time): the gate above at the larger
   size on a store where every search is a full scan; the share of the gate's wall time spent
   in its single-query search calls.
4. **history** (bytes a recorded run adds to a SQLite history, per golden query): the gate
   above at ``--history-queries`` sizes, each result recorded three times into a new history,
   the file's size (journal checkpointed) divided by three; with ``--baseline DIR``, the same
   with that checkout's code (e.g. before the history stored its detail compressed).
5. **ingest** (goals: the index's time shown in ingest's own output; no rebuild built and then
   refused): the ``recallwatch ingest --precomputed`` command, as a process of its own, on a
   seeded corpus of ``--ingest-rows`` chunks whose ``--ingest-dim`` vectors are given in the
   ``.npy`` beside it (so no embedding model's cost is in the figure, only recallwatch's and
   LanceDB's), into a new store with the default settings (an ANN index once 50,000 rows are
   written). Its wall time, peak memory (the command's process), the output it prints and what
   became of the index. ``--ingest-engine local ray``: the same command embedding the texts
   with the model instead (no ``--precomputed``), in its own process (``local``) or on a local
   Ray it starts with ``--workers --ingest-ray-workers`` (``ray``), each engine at both sizes;
   the Ray processes' peaks are sampled while it runs, and checked gone after it
   (``_ingest_unit.py``). ``--ingest-window N``: the texts each Ray run embeds (RayEmbedding's
   ``window``, 131,072 in the command), set in the command's process for the benchmark only.
6. **truth**: :func:`recallwatch.bench.exact_knn.ground_truth` of ``--truth-queries`` seeded queries
   on a seeded ``--truth-base`` × ``--truth-dim`` base (inner product, top ``--truth-k``): time,
   query × base pairs per second, and the peak memory per base row (with and without the base).

Speed is what this machine gave at that moment: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _ingest_unit import ENGINES, INGEST_EMBEDDER, INGEST_GOAL, ingest_step, ingest_worker
from _unit import begun, finish, in_process, peak_bytes, per_unit, worker_options

ROOT = Path(__file__).resolve().parent.parent
CODE = Path(os.environ.get("RW_BENCH_CODE", ROOT))  # the code measured (--baseline: another)
sys.path.insert(0, str(CODE))

GOALS = {"gate": ("KB per golden query", 25.0, 1024.0),
         "eval": ("B per run line", 60.0, 1.0),
         "history": ("B per golden query of a recorded run", None, 1.0),
         "ingest": INGEST_GOAL, "truth": ("B per base row", None, 1.0)}


# -- the steps, each run in its own process ---------------------------------------------------

def make_store(path: Path, base: int, dim: int) -> None:
    from recallwatch.stores.base import Chunk
    from recallwatch.stores.lancedb.store import LanceStore

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(base, dim)).astype(np.float32)
    store = LanceStore(path / "kb", index_threshold=base + 1, create=True)
    for start in range(0, base, 10_000):
        rows = range(start, min(start + 10_000, base))
        store.upsert([Chunk(id=f"c{i:08d}", text=f"chunk {i} " + "texto " * 40) for i in rows],
                     vectors[rows.start:rows.stop])
    store.close()
    np.save(path / "base.npy", vectors)


def _gate(path: Path, n: int) -> Any:
    """``run_gate`` of ``n`` golden queries on the store at ``path``, each a stored vector plus
    noise that expects its row."""
    from recallwatch.acceptance.gate import run_gate
    from recallwatch.embedders.function import CallableEmbedder
    from recallwatch.formats.golden import GoldenSet
    from recallwatch.stores.lancedb.store import LanceStore

    base = np.load(path / "base.npy", mmap_mode="r")
    rng = np.random.default_rng(1)
    rows = rng.choice(base.shape[0], size=n, replace=n > base.shape[0])
    noise = rng.normal(scale=0.3, size=(n, base.shape[1])).astype(np.float32)
    queries = np.asarray(base[rows], dtype=np.float32) + noise

    def embed(texts: Sequence[str]) -> np.ndarray:
        # a golden query's text ends with its number; other texts (the embedder's fingerprint
        # probes) get a fixed vector
        rows = [int(t.rsplit(" ", 1)[-1]) if t.startswith("query ") else 0 for t in texts]
        return queries[rows]

    embedder = CallableEmbedder(embed, name="bench", dimension=base.shape[1], batch_size=1024)
    golden = GoldenSet.from_dict({"name": "bench", "version": "1", "queries": [
        {"id": f"q{i}", "text": f"query {i}", "expected": [f"c{r:08d}"]}
        for i, r in enumerate(rows)]})
    store = LanceStore(path / "kb")
    return run_gate(golden, store=store, embedder=embedder)


def gate_worker(path: Path, n: int) -> dict[str, Any]:
    from recallwatch.report import json_parts

    before = peak_bytes()
    t0 = time.perf_counter()
    result = _gate(path, n)
    report = 0
    with open(path / "report.json", "w", encoding="utf-8") as out:  # as the CLI prints it
        for part in json_parts(result):
            report += out.write(part)
    took = time.perf_counter() - t0
    cost = result.cost or {}
    sampled = cost.get("search_mean_ms", 0.0) * cost.get("queries", 0) / 1000
    return {"n": n, "seconds": took, "peak_bytes": peak_bytes(), "peak_before_bytes": before,
            "report_chars": report, "latency_queries": cost.get("queries"),
            "latency_seconds": sampled, "latency_share": sampled / took,
            "mean_recall": result.aggregate.mean_recall}


def make_trec(path: Path, nq: int, depth: int) -> None:
    rng = np.random.default_rng(2)
    with open(path / f"qrels-{nq}", "w", encoding="ascii") as q, \
            open(path / f"run-{nq}", "w", encoding="ascii") as r:
        for i in range(nq):
            rel = rng.choice(depth * 2, size=5, replace=False)
            q.writelines(f"q{i} 0 d{d} {1 + d % 3}\n" for d in rel)
            docs = rng.choice(depth * 4, size=depth, replace=False)
            scores = np.sort(rng.random(depth))[::-1]
            r.writelines(f"q{i} Q0 d{d} {j + 1} {s:.6f} bench\n"
                         for j, (d, s) in enumerate(zip(docs, scores)))


def eval_worker(path: Path, n: int) -> dict[str, Any]:
    from recallwatch.metrics import evaluate_file

    before = peak_bytes()
    t0 = time.perf_counter()
    done = evaluate_file(path / f"qrels-{n}", path / f"run-{n}",
                         ["nDCG@10", "R@100", "RR", "AP", "P@10"])
    res = done.result
    took = time.perf_counter() - t0
    with open(path / f"run-{n}", "rb") as f:
        lines = sum(1 for _ in f)
    return {"n": n, "lines": lines, "seconds": took, "peak_bytes": peak_bytes(),
            "peak_before_bytes": before, "run_bytes": (path / f"run-{n}").stat().st_size,
            "blocks": done.blocks, "read_whole": done.read_whole,
            "temporary_files": done.temporary_files,
            "aggregate": {str(k): float(v) for k, v in res.aggregate.items()}}


HISTORY_RUNS = 3  # runs recorded per history; the bytes are divided by it


def history_worker(path: Path, n: int) -> dict[str, Any]:
    """The gate of ``n`` golden queries on the store (its chunks' excerpts shown as a real gate
    shows them), recorded HISTORY_RUNS times into a new SQLite history: bytes per run."""
    import sqlite3
    from dataclasses import replace

    from recallwatch.history import History

    result = _gate(path, n)
    db = path / f"history-{n}-{CODE.name}.db"
    t0 = time.perf_counter()
    with History(db) as h:
        for i in range(HISTORY_RUNS):
            h.record(replace(result, run_id=f"{result.run_id}-{i}"))
    took = time.perf_counter() - t0
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    size = db.stat().st_size
    return {"n": n, "seconds": took / HISTORY_RUNS, "bytes_per_run": size / HISTORY_RUNS,
            "peak_bytes": peak_bytes(), "code": str(CODE)}


def truth_worker(path: Path, n: int, dim: int, nq: int, k: int,
                 threads: int | None) -> dict[str, Any]:
    """``ground_truth`` (faiss flat search, inner product) of ``nq`` seeded queries on a seeded
    base of ``n`` × ``dim``, in this process, on ``threads`` faiss threads (None: faiss's own)."""
    import faiss

    from recallwatch.bench.exact_knn import ground_truth

    rng = np.random.default_rng(0)
    base = rng.standard_normal((n, dim), dtype=np.float32)
    queries = rng.standard_normal((nq, dim), dtype=np.float32)
    before = peak_bytes()
    t0 = time.perf_counter()
    ground_truth(base, queries, k, "ip", threads=threads)
    took = time.perf_counter() - t0
    return {"n": n, "dim": dim, "queries": nq, "k": k, "seconds": took,
            "pairs_per_s": n * nq / took, "peak_bytes": peak_bytes(),
            "peak_before_bytes": before, "base_bytes": base.nbytes,
            "faiss_threads": threads or faiss.omp_get_max_threads()}


WORKERS = {"gate": gate_worker, "eval": eval_worker, "history": history_worker}


def _in_process(step: str, path: Path, n: int, code: Path = ROOT,
                extra: list[str] | None = None) -> dict[str, Any]:
    return in_process(__file__, step, path, n, code, extra)


def truth_step(a: argparse.Namespace, path: Path, lines: list[str]) -> dict[str, Any]:
    extra = ["--truth-dim", str(a.truth_dim), "--truth-queries", str(a.truth_queries),
             "--truth-k", str(a.truth_k)] + (
                 [] if a.truth_threads is None else ["--truth-threads", str(a.truth_threads)])
    runs = [_in_process("truth", path, n, extra=extra) for n in a.truth_base]
    low, high = ({**r, "extra": r["peak_bytes"] - r["peak_before_bytes"]} for r in runs)
    out = {"dim": a.truth_dim, "queries": a.truth_queries, "k": a.truth_k, "runs": runs,
           **per_unit(GOALS["truth"], runs[0], runs[1], "n"),
           "beyond_inputs": per_unit(GOALS["truth"], low, high, "n", "extra")["per_unit"]}
    for r in runs:
        lines.append(f"truth    {r['n']:>9,} × {r['dim']} base, {r['queries']} queries, "
                     f"k {r['k']}  {r['seconds']:8.2f} s  {r['pairs_per_s'] / 1e6:,.0f} M "
                     f"pairs/s  peak {r['peak_bytes'] / 2**20:7.0f} MiB (faiss "
                     f"{r['faiss_threads']} threads)")
    lines.append(f"truth    memory per base row {out['per_unit']:,.0f} B ({4 * a.truth_dim} B "
                 f"of it the row itself; beyond the inputs {out['beyond_inputs']:,.0f} B)")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    steps = ["gate", "eval", "latency", "history", "ingest", "truth"]
    p.add_argument("--only", nargs="+", choices=steps, default=steps)
    p.add_argument("--ingest-rows", type=int, nargs=2, default=[10_000, 100_000])
    p.add_argument("--ingest-dim", type=int, default=512,
                   help="the dimension of the vectors given (that of " + INGEST_EMBEDDER + ")")
    p.add_argument("--ingest-store-options", default="",
                   help="added to the store URI, e.g. index_threshold=1000000 (default: none)")
    p.add_argument("--ingest-engine", nargs="+", choices=ENGINES, default=["precomputed"],
                   help="how the vectors are made: given (--precomputed, the default), embedded "
                   "in the command's process (local) or on a local Ray it starts (ray)")
    p.add_argument("--ingest-ray-workers", type=int, default=2,
                   help="--workers of ingest --engine ray (default: 2)")
    p.add_argument("--ingest-window", type=int, default=0,
                   help="texts a Ray run embeds (RayEmbedding's window; default: the command's)")
    p.add_argument("--truth-base", type=int, nargs=2, default=[100_000, 1_000_000])
    p.add_argument("--truth-dim", type=int, default=128)
    p.add_argument("--truth-queries", type=int, default=500)
    p.add_argument("--truth-k", type=int, default=10)
    p.add_argument("--truth-threads", type=int, default=None,
                   help="faiss threads for the exact truth (default: faiss's own, every core)")
    p.add_argument("--history-queries", type=int, nargs=2, default=[300, 3000])
    p.add_argument("--baseline", type=Path, default=None,
                   help="history: also measure this checkout's code (e.g. before a change)")
    p.add_argument("--gate-queries", type=int, nargs=2, default=[1000, 10_000])
    p.add_argument("--gate-base", type=int, default=20_000)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--eval-queries", type=int, nargs=2, default=[10_000, 100_000])
    p.add_argument("--eval-depth", type=int, default=100)
    p.add_argument("--out", type=Path, default=None)
    worker_options(p, [*WORKERS, "ingest", "truth"])
    a = p.parse_args()
    if a.worker:
        print(json.dumps(truth_worker(a.path, a.n, a.truth_dim, a.truth_queries, a.truth_k,
                                      a.truth_threads)
                         if a.worker == "truth" else
                         ingest_worker(a.path, a.n, a.ingest_engine[0], a.ingest_ray_workers,
                                       a.ingest_window)
                         if a.worker == "ingest" else WORKERS[a.worker](a.path, a.n)))
        return
    from recallwatch.bench.sweep import machine_info

    result = begun(machine=machine_info(("lance",)))
    lines = []
    with tempfile.TemporaryDirectory(prefix="rw-unit-") as tmp:
        path = Path(tmp)
        if "gate" in a.only or "latency" in a.only:
            t0 = time.perf_counter()
            make_store(path, a.gate_base, a.dim)
            print(f"  store of {a.gate_base} × {a.dim} written in "
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
            runs = [_in_process("gate", path, n) for n in a.gate_queries]
            result["gate"] = {"base": a.gate_base, "dim": a.dim, "runs": runs,
                              **per_unit(GOALS["gate"], runs[0], runs[1], "n")}
            g = result["gate"]
            for r in runs:
                lines.append(f"gate     {r['n']:>9,} queries  {r['seconds']:8.1f} s  peak "
                             f"{r['peak_bytes'] / 2**20:7.0f} MiB  latency sample "
                             f"{r['latency_queries']} queries, {r['latency_share']:.1%} of "
                             "the gate")
            lines.append(f"gate     memory per golden query {g['per_unit']:.1f} KB "
                         f"(goal ≤ {g['goal']:g}: {'met' if g['met'] else 'NOT met'})")
            share = runs[1]["latency_share"]
            result["latency"] = {"share": share, "goal": 0.10, "met": share <= 0.10}
            lines.append(f"latency  sample {share:.1%} of the gate at {runs[1]['n']:,} queries "
                         f"(goal ≤ 10 %: {'met' if share <= 0.10 else 'NOT met'})")
        if "eval" in a.only:
            for n in a.eval_queries:
                make_trec(path, n, a.eval_depth)
            runs = [_in_process("eval", path, n) for n in a.eval_queries]
            result["eval"] = {"depth": a.eval_depth, "runs": runs,
                              **per_unit(GOALS["eval"], runs[0], runs[1], "lines")}
            e = result["eval"]
            for r in runs:
                lines.append(f"eval     {r['lines']:>9,} run lines  {r['seconds']:8.1f} s  peak "
                             f"{r['peak_bytes'] / 2**20:7.0f} MiB  "
                             f"({r['run_bytes'] / r['lines']:.0f} B of text per line; "
                             f"{r['blocks']} blocks, {r['temporary_files']} temporary files)")
            lines.append(f"eval     memory per run line {e['per_unit']:.0f} B "
                         f"(goal ≤ {e['goal']:g}: {'met' if e['met'] else 'NOT met'})")
        if "history" in a.only:
            if "gate" not in a.only and "latency" not in a.only:
                make_store(path, a.gate_base, a.dim)
            codes = [ROOT] + ([a.baseline.resolve()] if a.baseline else [])
            result["history"] = {}
            for code in codes:
                runs = [_in_process("history", path, n, code) for n in a.history_queries]
                h = {"runs": runs,
                     **per_unit(GOALS["history"], runs[0], runs[1], "n", "bytes_per_run")}
                result["history"][str(code)] = h
                what = "this code" if code == ROOT else f"code at {code}"
                for r in runs:
                    lines.append(f"history  {r['n']:>9,} queries  {r['seconds']:8.2f} s per "
                                 f"run recorded  {r['bytes_per_run'] / 1024:9.1f} KB per run "
                                 f"({what})")
                lines.append(f"history  {h['per_unit']:.0f} B per golden query of a recorded "
                             f"run ({what})")
        if "ingest" in a.only:
            result["ingest"] = ingest_step(a, path, lines, __file__, ROOT)
        if "truth" in a.only:
            result["truth"] = truth_step(a, path, lines)
    finish(result, lines, a.out)


if __name__ == "__main__":
    main()
