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

Whole processes (``--whole-process``), what a user waits for at the prompt, rounds interleaved:
  rw-cold       `recallwatch eval QRELS RUN -m ... --format json`, run cache off
  rw-warm       the same with the run already in the binary cache (RECALLWATCH_CACHE_DIR)
  rw-parquet    the same run as Parquet, read by `Run.read` (what `recallwatch eval` calls),
                evaluated in a small Python child
  rw-before     (with --baseline DIR) the same command with another checkout's code
  pytrec-files  a Python process that parses both files with pytrec_eval's own parsers
                (parse_qrel, parse_run) and evaluates; it also reports the time of
                RelevanceEvaluator + evaluate() alone on the dicts it built
Values are checked equal (|diff| < 1e-9 on every query and measure) before timing.
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


PYTREC_FILES = """
import sys, time, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
t = time.perf_counter()
evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(sys.argv[3].split(",")))
out = evaluator.evaluate(run)
print(time.perf_counter() - t)
"""
WRITE_PARQUET = """
import sys
import pyarrow as pa
import pyarrow.parquet as pq
from recallwatch.formats.trec import read_run
t = read_run(sys.argv[1])
pq.write_table(pa.table({"qid": t.query_ids, "docid": t.doc_ids, "score": t.values}), sys.argv[2])
"""
RW_PARQUET = """
import json, sys
from recallwatch.metrics import Qrels, Run, evaluate
res = evaluate(Qrels.from_trec(sys.argv[1]), Run.read(sys.argv[2]), sys.argv[3].split(","))
print(json.dumps(res.to_json(), indent=2))
"""


def _recallwatch() -> list[str]:
    script = Path(sys.executable).with_name("recallwatch")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from recallwatch.cli import main; sys.exit(main())"]


def _child(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run one process to completion: its wall time, CPU time, peak RSS and stdout."""
    import os

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not all children's
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{argv[:3]} exited {proc.returncode}: {err.read().decode()[-2000:]}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                "rss_mb": usage.ru_maxrss / 1024, "stdout": out.read().decode()}


def whole_process(directory: Path, rounds: int, baseline: Path | None = None,
                  burn: int = 0) -> None:
    """Interleaved rounds of whole-process evaluations; ratios are taken within each round."""
    import os

    qrels, run = directory / "qrels.txt", directory / "run.txt"
    parquet = directory / "run.parquet"
    if not parquet.exists():  # in a child: see below
        subprocess.run([sys.executable, "-c", WRITE_PARQUET, str(run), str(parquet)], check=True)
    cache_dir = directory / "rw-cache"
    # with Python's bytecode cache, as a user runs (see benchmarks/startup_bench.py)
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    envs = {
        "rw-cold": {**base_env, "RECALLWATCH_CACHE": "0"},
        "rw-warm": {**base_env, "RECALLWATCH_CACHE_DIR": str(cache_dir)},
        "rw-parquet": {**base_env, "RECALLWATCH_CACHE": "0"},
        "pytrec-files": base_env,
    }
    measures = [x for m in MEASURES for x in ("-m", m)]
    argv = {
        "rw-cold": [*_recallwatch(), "eval", str(qrels), str(run), *measures, "--format", "json"],
        "rw-warm": [*_recallwatch(), "eval", str(qrels), str(run), *measures, "--format", "json"],
        "rw-parquet": [sys.executable, "-c", RW_PARQUET, str(qrels), str(parquet),
                       ",".join(MEASURES)],
        "pytrec-files": [sys.executable, "-c", PYTREC_FILES, str(qrels), str(run),
                         "ndcg_cut.10,recall.100,recip_rank,map,P.10"],
    }
    if baseline is not None:  # the same command on another checkout (e.g. before a change)
        envs["rw-before"] = {**base_env, "PYTHONPATH": str(baseline), "RECALLWATCH_CACHE": "0"}
        # -P: no working directory on sys.path, so PYTHONPATH alone picks the checkout
        argv["rw-before"] = [sys.executable, "-P", "-c", "import sys; from recallwatch.cli "
                             "import main; sys.exit(main())", "eval", str(qrels), str(run),
                             *measures, "--format", "json"]
    # In a child: a forked child's peak RSS counts what its parent held when it forked (Linux
    # keeps the high-water mark across exec), so this parent must stay small.
    subprocess.run([sys.executable, __file__, "--check-values", "--dir", str(directory)],
                   check=True)
    for _ in range(2):  # first sight records a hint, the second writes the entry
        _child(argv["rw-warm"], envs["rw-warm"])
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in argv}
    loads: list[float] = []
    names = list(argv)
    # busy processes: the load of a shared machine, on demand (the report says how many)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burn)]
    try:
        _rounds(rounds, names, argv, envs, results, loads)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    loads.append(os.getloadavg()[0])
    if burn:
        print(f"  ({burn} busy processes ran during the rounds)")
    _report_whole_process(results, loads)


def _rounds(rounds: int, names: list[str], argv: dict[str, list[str]],
            envs: dict[str, dict[str, str]], results: dict[str, list[dict[str, Any]]],
            loads: list[float]) -> None:
    import os

    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            out = _child(argv[name], envs[name])
            if name == "pytrec-files":
                out["evaluate_alone"] = float(out["stdout"].strip())
            del out["stdout"]
            results[name].append(out)
        print(f"  round {r + 1}: " + ", ".join(
            f"{n} {results[n][-1]['wall']:.2f} s" for n in names)
            + f", pytrec evaluate() alone {results['pytrec-files'][-1]['evaluate_alone']:.2f} s"
            + f" (load {loads[-1]:.1f})", flush=True)


def _check_whole_process_values(directory: Path) -> None:
    """The CLI's per-query values, the Parquet path's and pytrec_eval's, compared once."""
    import os

    import pytrec_eval

    from recallwatch.metrics import Qrels, Run, evaluate

    qrels, run = directory / "qrels.txt", directory / "run.txt"
    parquet = directory / "run.parquet"
    cli = json.loads(subprocess.run(
        [*_recallwatch(), "eval", str(qrels), str(run),
         *[x for m in MEASURES for x in ("-m", m)], "--per-query", "--format", "json"],
        env={**os.environ, "RECALLWATCH_CACHE": "0"}, check=True, capture_output=True).stdout)
    res = evaluate(Qrels.from_trec(qrels), Run.read(parquet), MEASURES)
    with open(qrels) as f:
        pq = pytrec_eval.parse_qrel(f)
    with open(run) as f:
        pr = pytrec_eval.parse_run(f)
    ref = pytrec_eval.RelevanceEvaluator(
        pq, {"ndcg_cut.10", "recall.100", "recip_rank", "map", "P.10"}).evaluate(pr)
    worst = 0.0
    for i, qid in enumerate(res.query_ids):
        for m in res.measures:
            a = cli["per_query"][qid][str(m)]
            b = float(res.per_query[m][i])
            c = ref[qid][PYTREC[str(m)]] if qid in ref else 0.0
            worst = max(worst, abs(a - c), abs(b - c))
    assert worst < 1e-9, f"values differ: max |diff| {worst}"
    print(f"values: CLI (TREC), library (Parquet) and pytrec_eval agree on all "
          f"{len(res.query_ids):,} queries x {len(MEASURES)} measures (max |diff| {worst:.1e})",
          flush=True)


def _report_whole_process(results: dict[str, list[dict[str, Any]]], loads: list[float]) -> None:
    rounds = len(results["rw-cold"])

    def stat(values: list[float]) -> str:
        v = sorted(values)
        return f"best {v[0]:6.2f}  median {v[len(v) // 2]:6.2f}"

    print(f"\nwhole process, {rounds} interleaved rounds, load average {min(loads):.1f}-"
          f"{max(loads):.1f} on {_machine()}")
    for name, runs in results.items():
        print(f"  {name:14s} wall {stat([r['wall'] for r in runs])} s   CPU "
              f"{stat([r['cpu'] for r in runs])} s   peak RSS "
              f"{max(r['rss_mb'] for r in runs):.0f} MB")
    alone = [r["evaluate_alone"] for r in results["pytrec-files"]]
    print(f"  {'pytrec eval()':14s} in-process {stat(alone)} s (RelevanceEvaluator + evaluate)")
    print("  ratios within each round (median over rounds; >1 means recallwatch is faster):")
    for name in [n for n in ("rw-before", "rw-cold", "rw-warm", "rw-parquet") if n in results]:
        files = sorted(p["wall"] / r["wall"] for p, r in zip(results["pytrec-files"],
                                                              results[name]))
        ev = sorted(p["evaluate_alone"] / r["wall"] for p, r in zip(results["pytrec-files"],
                                                                     results[name]))
        print(f"    {name:12s} pytrec-files / it: median {files[len(files) // 2]:.2f}x "
              f"(range {files[0]:.2f}-{files[-1]:.2f});  pytrec evaluate() alone / it: median "
              f"{ev[len(ev) // 2]:.2f}x (range {ev[0]:.2f}-{ev[-1]:.2f})")
    print(f"  date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


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
    parser.add_argument("--whole-process", action="store_true",
                        help="time whole `recallwatch eval` processes against pytrec_eval "
                        "from files (needs --dir holding qrels.txt and run.txt, or writes them)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --whole-process")
    parser.add_argument("--baseline", type=Path, help="with --whole-process: also time the CLI "
                        "of this checkout (its directory goes on PYTHONPATH), e.g. the code "
                        "before a change")
    parser.add_argument("--burn", type=int, default=0,
                        help="with --whole-process: busy processes during the rounds")
    parser.add_argument("--check-values", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check_values:
        _check_whole_process_values(args.dir)
        return
    if args.whole_process:
        directory = args.dir or Path(tempfile.mkdtemp())
        if not (directory / "run.txt").exists():
            directory.mkdir(parents=True, exist_ok=True)
            generate(directory, args.queries, args.docs, args.seed)
        whole_process(directory, args.rounds, args.baseline, args.burn)
        return
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
