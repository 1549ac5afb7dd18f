"""Evaluation from Python dicts: recallwatch against pytrec_eval, from the same dicts.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/eval_dicts_bench.py [--queries 10000]
        [--rounds 3] [--baseline CHECKOUT]

A run of ``--queries`` queries x 100 documents and its qrels (10 judgments per query: 4 relevant
documents retrieved, 1 relevant never retrieved, 5 judged non-relevant; grades 1-3; fixed seed;
scores distinct within a query) are built as ``{query_id: {doc_id: score}}`` and ``{query_id:
{doc_id: grade}}`` dicts, untimed. Timed, in each tool's own fresh process, five measures
(nDCG@10, R@100, RR, AP, P@10), after one call on a two-query input (imports and first-call
costs untimed, as in a session that evaluates more than once):

  recallwatch   ``rw.evaluate(qrels, run, measures)`` on the dicts: ``Qrels.from_dict``,
                ``Run.from_dict`` and the evaluation (where ``rw.evaluate`` does not take dicts,
                the same three calls)
  pytrec_eval   ``RelevanceEvaluator(qrels, measures)`` and ``evaluate(run)``
  before        (with --baseline) recallwatch as another checkout has it

The rounds are interleaved, the order rotating; the ratio pytrec_eval / recallwatch is taken
within each round, on wall time and on the process's CPU time (steadier on a loaded machine).
Before timing, one process computes both tools' values on every query and stops unless they
agree (|diff| < 1e-9). Peak RSS is each process's (the dicts included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

MEASURES = ["nDCG@10", "R@100", "RR", "AP", "P@10"]
PYTREC = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100", "RR": "recip_rank", "AP": "map",
          "P@10": "P_10"}


def make_dicts(queries: int, seed: int = 0, per_query: int = 100
               ) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = np.random.default_rng(seed)
    collection = 1_000_003  # prime: the stride never repeats a document within a query
    start = rng.integers(0, collection, queries)
    stride = rng.integers(1, collection, queries)
    docs = (start[:, None] + stride[:, None] * np.arange(per_query)[None, :]) % collection
    draws = np.sort(rng.integers(0, 2**20, (queries, per_query)), axis=1)[:, ::-1]
    scores = ((draws + np.arange(per_query)[::-1]) / 1024.0).tolist()  # distinct, decreasing
    names = np.char.add("d", docs.astype(str)).tolist()
    picks = np.argsort(rng.random((queries, per_query)), axis=1)[:, :9]
    judged = np.concatenate([np.take_along_axis(docs, picks, axis=1),
                             (docs[:, :1] + 500_000) % collection], axis=1)
    grades = np.concatenate([rng.integers(1, 4, (queries, 4)), np.zeros((queries, 5), np.int64),
                             rng.integers(1, 4, (queries, 1))], axis=1).tolist()
    judged_names = np.char.add("d", judged.astype(str)).tolist()
    run = {f"q{q}": dict(zip(names[q], scores[q])) for q in range(queries)}
    qrels = {f"q{q}": dict(zip(judged_names[q], grades[q])) for q in range(queries)}
    return qrels, run


def recallwatch_values(qrels: Any, run: Any) -> tuple[list[str], dict[str, list[float]]]:
    import recallwatch as rw

    if hasattr(rw.Qrels, "of"):  # rw.evaluate takes the dicts themselves
        res = rw.evaluate(qrels, run, MEASURES)
    else:
        res = rw.evaluate(rw.Qrels.from_dict(qrels), rw.Run.from_dict(run), MEASURES)
    per_query = getattr(res, "per_query", None)
    values = {str(m): list(map(float, v)) for m, v in per_query.items()} if per_query else {}
    return list(getattr(res, "query_ids", [])), values


def pytrec_values(qrels: Any, run: Any) -> dict[str, dict[str, float]]:
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "recall.100", "recip_rank", "map", "P.10"})
    out: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return out


def child(tool: str, queries: int) -> None:
    """One tool, in this fresh process: the dicts built untimed, then the evaluation timed."""
    import resource

    qrels, run = make_dicts(queries)
    small = make_dicts(2, seed=1)  # imports and first-call costs paid untimed, as in a session
    (pytrec_values if tool == "pytrec_eval" else recallwatch_values)(*small)
    t0, c0 = time.perf_counter(), time.process_time()
    if tool == "pytrec_eval":
        pytrec_values(qrels, run)
    else:
        recallwatch_values(qrels, run)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": peak}))


def check(queries: int) -> str:
    qrels, run = make_dicts(queries)
    qids, mine = recallwatch_values(qrels, run)
    theirs = pytrec_values(qrels, run)
    worst = 0.0
    for m in MEASURES:
        for qid, value in zip(qids, mine[m]):
            worst = max(worst, abs(value - theirs[qid][PYTREC[m]]))
    if worst >= 1e-9 or len(qids) != len(theirs):
        raise SystemExit(f"values differ: max |diff| {worst:.1e}, {len(qids)} vs {len(theirs)}")
    return (f"values: recallwatch and pytrec_eval agree on all {len(qids):,} queries x "
            f"{len(MEASURES)} measures (max |diff| {worst:.1e})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout to time as 'before'")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.queries)
        return
    here = [sys.executable, __file__, "--queries", str(args.queries)]
    print(_checked(args.queries), flush=True)
    env = dict(os.environ)
    tools = {"recallwatch": (here, env), "pytrec_eval": (here, env)}
    if args.baseline is not None:
        tools["before"] = ([sys.executable, "-P", __file__, "--queries", str(args.queries)],
                           {**env, "PYTHONPATH": str(args.baseline.resolve())})
    names = list(tools)
    results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name in names[r % len(names):] + names[:r % len(names)]:
            argv, e = tools[name]
            out = subprocess.run([*argv, "--child", "recallwatch" if name == "before" else name],
                                 check=True, capture_output=True, text=True, env=e)
            results[name].append(json.loads(out.stdout))
        print(f"  round {r + 1}: " + ", ".join(f"{n} {results[n][-1]['wall']:.2f} s"
                                              for n in names) + f" (load {loads[-1]:.1f})",
              flush=True)
    loads.append(os.getloadavg()[0])
    report(results, loads, args)


def _checked(queries: int) -> str:
    """The values check, in a process of its own (it holds both tools' results)."""
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                          "import eval_dicts_bench as b; print(b.check(int(sys.argv[2])))",
                          str(Path(__file__).parent), str(queries)],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def report(results: dict[str, list[dict[str, float]]], loads: list[float], args: Any) -> None:
    from recallwatch.bench.sweep import machine_info

    med = statistics.median
    info = machine_info(("pytrec_eval",))
    print(f"\n{args.queries:,} queries x 100 documents, {args.rounds} interleaved rounds, load "
          f"average {min(loads):.1f}-{max(loads):.1f} on {info['cpus']} CPUs "
          f"({info['processor']}), Python {info['python']}, numpy {info['numpy']}; "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    for name, rs in results.items():
        walls = [r["wall"] for r in rs]
        print(f"  {name:12s} wall median {med(walls):6.2f} s (best {min(walls):.2f})  CPU "
              f"median {med(r['cpu'] for r in rs):6.2f} s  peak RSS "
              f"{max(r['rss_mb'] for r in rs):5.0f} MB")
    for name in results:
        if name == "pytrec_eval":
            continue
        for clock in ("wall", "cpu"):
            ratios = sorted(p[clock] / m[clock] for p, m in zip(results["pytrec_eval"],
                                                                 results[name]))
            print(f"  pytrec_eval / {name} ({clock}): median {med(ratios):.2f}x (range "
                  f"{ratios[0]:.2f}-{ratios[-1]:.2f}; >1: {name} faster)")


if __name__ == "__main__":
    main()
