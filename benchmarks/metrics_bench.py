"""Rank-metrics benchmark: recallwatch against pytrec_eval, ranx and ir_measures.

    .venv/bin/python benchmarks/metrics_bench.py                 # 100,000 queries x 100 documents
    .venv/bin/python benchmarks/metrics_bench.py --queries 2000  # a quick run

Writes a synthetic collection as TREC files (fixed seed; ~5 relevant documents per query with
grades 1-3 plus 5 judged non-relevant; scores distinct within a query, so every tool ranks alike
whatever its tie convention), then runs each tool in its own fresh process so that its peak
memory (``ru_maxrss``: peak resident set of the whole process, imports and input included) is its
own. Every tool's per-query values are checked equal before any figure is printed.

Timed, per tool:
  recallwatch (files)   Qrels.from_trec + Run.from_trec + evaluate: end to end from the files
  recallwatch (memory)  Qrels.from_dict + Run.from_dict + evaluate, from the same dicts the
                        others get (dict building not timed)
  pytrec_eval           RelevanceEvaluator(qrels) + evaluate(run), from dicts
  ranx                  Qrels(dict), Run(dict) construction, then evaluate (JIT warmed first)
  ir_measures           calc_aggregate-equivalent iter_calc from dicts
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

MEASURES = ["nDCG@10", "R@100", "RR", "AP", "P@10"]
PYTREC = {
    "nDCG@10": "ndcg_cut_10",
    "R@100": "recall_100",
    "RR": "recip_rank",
    "AP": "map",
    "P@10": "P_10",
}
RANX = {
    "nDCG@10": "ndcg@10",
    "R@100": "recall@100",
    "RR": "mrr",
    "AP": "map",
    "P@10": "precision@10",
}
TOOLS = ["recallwatch-files", "recallwatch-memory", "pytrec_eval", "ranx", "ir_measures"]


def generate(directory: Path, n_queries: int, per_query: int, seed: int) -> None:
    """Write run.txt and qrels.txt: vectorised, so 10 million lines take seconds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from recallwatch.formats.trec import write_qrels, write_run

    rng = np.random.default_rng(seed)
    collection = 1_000_003  # prime, so the stride below never repeats within a query
    start = rng.integers(0, collection, n_queries)
    stride = rng.integers(1, collection, n_queries)
    docs = (start[:, None] + stride[:, None] * np.arange(per_query)[None, :]) % collection
    # strictly decreasing, float32-exact scores: sorted draws plus a decreasing offset
    draws = np.sort(rng.integers(0, 2**20, (n_queries, per_query)), axis=1)[:, ::-1]
    scores = (draws + np.arange(per_query)[::-1]) / 1024.0
    qnum = np.repeat(np.arange(n_queries), per_query)
    qids = pc.binary_join_element_wise("q", pc.cast(pa.array(qnum), pa.string()), "")
    docids = pc.binary_join_element_wise("d", pc.cast(pa.array(docs.ravel()), pa.string()), "")
    ranks = np.tile(np.arange(1, per_query + 1), n_queries)
    write_run(directory / "run.txt", qids, docids, ranks, scores.ravel(), tag="bench")

    # per query: 4 relevant retrieved + 1 relevant never retrieved, 5 judged non-relevant
    picks = np.argsort(rng.random((n_queries, per_query)), axis=1)[:, :9]
    judged_docs = np.concatenate(
        [np.take_along_axis(docs, picks, axis=1), (docs[:, :1] + 500_000) % collection], axis=1
    )
    grades = np.concatenate(
        [
            rng.integers(1, 4, (n_queries, 4)),
            np.zeros((n_queries, 5), np.int64),
            rng.integers(1, 4, (n_queries, 1)),
        ],
        axis=1,
    )
    jq = np.repeat(np.arange(n_queries), judged_docs.shape[1])
    write_qrels(
        directory / "qrels.txt",
        pc.binary_join_element_wise("q", pc.cast(pa.array(jq), pa.string()), ""),
        pc.binary_join_element_wise("d", pc.cast(pa.array(judged_docs.ravel()), pa.string()), ""),
        grades.ravel(),
    )


def _read_dicts(directory: Path) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(directory / "qrels.txt") as f:
        for line in f:
            q, _, d, g = line.split()
            qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    with open(directory / "run.txt") as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    return qrels, run


def _tool(name: str, directory: Path) -> dict[str, Any]:
    """Run one tool (in this fresh process); return timings and per-query values."""
    import resource

    timings: dict[str, float] = {}
    values: dict[str, list[float]] = {}
    if name == "recallwatch-files":
        from recallwatch.metrics import Qrels, Run, evaluate

        t0 = time.perf_counter()
        qrels = Qrels.from_trec(directory / "qrels.txt")
        run = Run.from_trec(directory / "run.txt")
        t1 = time.perf_counter()
        res = evaluate(qrels, run, MEASURES)
        t2 = time.perf_counter()
        timings = {"parse": t1 - t0, "evaluate": t2 - t1, "total": t2 - t0}
        values = {str(m): res.per_query[m].tolist() for m in res.measures}
        qids = res.query_ids
    else:
        qd, rd = _read_dicts(directory)
        qids = sorted(qd)
        if name == "recallwatch-memory":
            from recallwatch.metrics import Qrels, Run, evaluate

            t0 = time.perf_counter()
            qrels, run = Qrels.from_dict(qd), Run.from_dict(rd)
            t1 = time.perf_counter()
            res = evaluate(qrels, run, MEASURES)
            t2 = time.perf_counter()
            timings = {"construct": t1 - t0, "evaluate": t2 - t1, "total": t2 - t0}
            values = {str(m): res.per_query[m].tolist() for m in res.measures}
        elif name == "pytrec_eval":
            import pytrec_eval

            t0 = time.perf_counter()
            evaluator = pytrec_eval.RelevanceEvaluator(
                qd, {"ndcg_cut.10", "recall.100", "recip_rank", "map", "P.10"}
            )
            out = evaluator.evaluate(rd)
            t1 = time.perf_counter()
            timings = {"total": t1 - t0}
            values = {m: [out[q][PYTREC[m]] for q in qids] for m in MEASURES}
        elif name == "ranx":
            from ranx import Qrels as RQrels
            from ranx import Run as RRun
            from ranx import evaluate as revaluate

            warm_q, warm_r = RQrels({"a": {"x": 1}}), RRun({"a": {"x": 1.0, "y": 0.5}})
            revaluate(warm_q, warm_r, list(RANX.values()))  # compile the numba kernels first
            t0 = time.perf_counter()
            rq, rr = RQrels(qd), RRun(rd)
            t1 = time.perf_counter()
            revaluate(rq, rr, list(RANX.values()))
            t2 = time.perf_counter()
            timings = {"construct": t1 - t0, "evaluate": t2 - t1, "total": t2 - t0}
            values = {m: [rr.scores[RANX[m]][q] for q in qids] for m in MEASURES}
        elif name == "ir_measures":
            import ir_measures

            parsed = [ir_measures.parse_measure(m) for m in MEASURES]
            t0 = time.perf_counter()
            per: dict[str, dict[str, float]] = {m: {} for m in MEASURES}
            for metric in ir_measures.iter_calc(parsed, qd, rd):
                per[str(metric.measure)][metric.query_id] = metric.value
            t1 = time.perf_counter()
            timings = {"total": t1 - t0}
            values = {m: [per[m].get(q, 0.0) for q in qids] for m in MEASURES}
        else:
            raise SystemExit(f"unknown tool {name!r}")
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "tool": name,
        "timings": timings,
        "peak_rss_mb": peak_kb / 1024,
        "qids": qids,
        "values": values,
    }


def _machine() -> str:
    from recallwatch.bench.sweep import machine_info

    m = machine_info(())
    return f"{m['cpus']} CPUs ({m['processor']}), Python {m['python']}, {platform.system()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=100, help="documents per query")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset")
    parser.add_argument("--dir", type=Path, help="where to write the TREC files (default: temp)")
    parser.add_argument("--tool", help=argparse.SUPPRESS)  # internal: run one tool and exit
    args = parser.parse_args()
    if args.tool:
        result = _tool(args.tool, args.dir)
        (args.dir / f"{args.tool}.json").write_text(json.dumps(result))
        return

    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        generate(directory, args.queries, args.docs, args.seed)
        lines = args.queries * args.docs
        print(
            f"data: {args.queries} queries x {args.docs} docs = {lines:,} run lines, "
            f"seed {args.seed}, written in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        results: dict[str, dict[str, Any]] = {}
        for tool in args.tools.split(","):
            subprocess.run(
                [sys.executable, __file__, "--tool", tool, "--dir", str(directory)], check=True
            )
            results[tool] = json.loads((directory / f"{tool}.json").read_text())
            print(
                f"  {tool:20s} {results[tool]['timings']}  peak RSS "
                f"{results[tool]['peak_rss_mb']:.0f} MB",
                flush=True,
            )
        report(results)


def report(results: dict[str, dict[str, Any]]) -> None:
    base = results.get("recallwatch-files") or next(iter(results.values()))
    for tool, r in results.items():
        assert r["qids"] == base["qids"], f"{tool}: different query set"
        for m in MEASURES:
            diff = np.max(np.abs(np.asarray(r["values"][m]) - np.asarray(base["values"][m])))
            assert diff < 1e-9, f"{tool} disagrees with recallwatch on {m}: max |diff| {diff}"
    print("\nall tools agree on every query (|diff| < 1e-9) for " + ", ".join(MEASURES))
    means = {m: float(np.mean(base["values"][m])) for m in MEASURES}
    print("means: " + ", ".join(f"{m}={v:.4f}" for m, v in means.items()))
    print(
        f"\n{'tool':22s}{'time (s)':>10s}{'peak RSS (MB)':>15s}{'time vs rw-files':>18s}"
        f"{'RSS vs rw-files':>17s}"
    )
    rw_t = base["timings"]["total"]
    rw_m = base["peak_rss_mb"]
    for tool, r in results.items():
        t, mem = r["timings"]["total"], r["peak_rss_mb"]
        print(f"{tool:22s}{t:10.2f}{mem:15.0f}{t / rw_t:17.1f}x{mem / rw_m:16.2f}x")
    for tool, r in results.items():
        print(f"  {tool}: " + ", ".join(f"{k} {v:.2f} s" for k, v in r["timings"].items()))
    print(f"\nmachine: {_machine()}; date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
