"""Fusion: recallwatch's ``fuse`` against ``ranx.fuse`` (warm), every method and normalisation.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fusion_bench.py [--queries 10000] [--hits 100]
        [--rounds 3] [--methods rrf,combsum] [--norms none,min-max] [--baseline CHECKOUT]
        [--json OUT]

Three retrievers' lists for every query (fixed seed): ``--hits`` results each, drawn from 250
candidates per query, so a chunk is in one, two or all three lists; scores distinct, on three
scales (0-1, 0-30, 0-5), as a cosine, a BM25 and a third retriever's would be. Each tool gets the
lists in its own form, built before timing, and returns its own: recallwatch lists of (id, score)
pairs in and out; ranx ``Run`` objects made from the same dicts in, a ``Run`` out.

ranx compiles its numba kernels on first use (minutes; kept in its package folder afterwards):
every method and normalisation is called once on five queries before anything is timed.

Values are checked before timing, for every method and normalisation: every query (or every
``--check-every``-th) has the same chunks in both, and every fused score is within 1e-9 of
ranx's. (combmax: recallwatch does not
floor a chunk a list lacks at -1e9 as ranx does; no score here comes near -1e9.)

Timing: in each round every (method, normalisation) runs ranx and recallwatch one after the other,
which goes first alternating by round; wall time (``perf_counter``) and CPU time (the process's:
ranx's parallel loops use every core). The ratio is ranx's wall time over recallwatch's within
the round, its median over the rounds is printed with the range, and the same ratio of CPU
times (ranx's on all its threads). ``--baseline DIR`` also times
``recallwatch/retrievers/fusion.py`` of another checkout (e.g. main before a change) in the same
rounds, after checking that it gives the same lists.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import sys
import time
import warnings
from datetime import UTC, datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from recallwatch.bench.sweep import machine_info
from recallwatch.retrievers.fusion import METHODS, NORMS, fuse

NAMES = ["dense", "bm25", "api"]
WEIGHTS = {"dense": 0.5, "bm25": 0.3, "api": 0.2}
RANX_METHOD = {"rrf": "rrf", "combsum": "sum", "combmnz": "mnz", "combmax": "max",
               "wsum": "wsum"}
Lists = dict[str, list[list[tuple[str, float]]]]


def make_lists(queries: int, hits: int, seed: int, pool: int = 250) -> Lists:
    """{retriever: one ranked list per query}: distinct ids within a query, scores decreasing."""
    rng = np.random.default_rng(seed)
    base = (np.arange(queries * pool).reshape(queries, pool) * 7919 + 12345) % 99_999_989
    out: Lists = {}
    for scale, name in zip((1.0, 30.0, 5.0), NAMES):
        pick = np.argsort(rng.random((queries, pool)), axis=1)[:, :hits]
        ids = np.char.add("doc", np.take_along_axis(base, pick, axis=1).astype(str)).tolist()
        scores = (-np.sort(-rng.random((queries, hits)) * scale, axis=1)).tolist()
        out[name] = [list(zip(i, s)) for i, s in zip(ids, scores)]
    return out


def ranx_runs(lists: Lists, queries: int | None = None) -> list[Any]:
    from ranx import Run

    return [Run.from_dict({f"q{q}": dict(hits) for q, hits in enumerate(lists[n][:queries])},
                          name=n) for n in NAMES]


def ranx_call(runs: list[Any], method: str, norm: str | None) -> Any:
    from ranx import fuse as ranx_fuse

    params = ({"weights": [WEIGHTS[n] for n in NAMES]} if method == "wsum"
              else {"k": 60} if method == "rrf" else None)
    return ranx_fuse(runs, norm=norm, method=RANX_METHOD[method], params=params)


def ours(lists: Lists, method: str, norm: str | None, fn: Any = fuse) -> list[list[Any]]:
    out: list[list[Any]] = fn(lists, method=method, norm=norm, k=60,
                              weights=WEIGHTS if method == "wsum" else None)
    return out


def check(mine: list[list[Any]], theirs: Any, queries: int, every: int = 1) -> float:
    """The largest |difference| of a fused score, on every ``every``-th query; raises if a
    query's chunks differ."""
    got = theirs.run
    worst = 0.0
    for q in range(0, len(mine), every):
        hits = mine[q]
        want = dict(got[f"q{q}"]) if f"q{q}" in got else {}
        if len(want) != len(hits) or any(c not in want for c, _ in hits):
            raise SystemExit(f"query q{q}: the fused chunks differ from ranx's")
        if hits:
            a = np.array([s for _, s in hits])
            b = np.fromiter((want[c] for c, _ in hits), np.float64, count=len(hits))
            worst = max(worst, float(np.abs(a - b).max()))
        if [s for _, s in hits] != sorted((s for _, s in hits), reverse=True):
            raise SystemExit(f"query q{q}: recallwatch's list is not in score order")
    if len(got) > queries:
        raise SystemExit("ranx answered queries that were not asked")
    return worst


def timed(call: Any) -> tuple[float, float, Any]:
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - w, time.process_time() - c, out


def load_baseline(checkout: Path) -> Any:
    spec = importlib.util.spec_from_file_location(
        "baseline_fusion", checkout / "recallwatch" / "retrievers" / "fusion.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fuse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--hits", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--norms", default="none," + ",".join(NORMS))
    parser.add_argument("--baseline", type=Path, help="another checkout to time as 'before'")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--check-every", type=int, default=1,
                        help="check the values of every N-th query (default: every query)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # numba's deprecation and type-safety notes from ranx
    norms = [None if n == "none" else n for n in args.norms.split(",")]
    cases = [(m, n) for m in args.methods.split(",") for n in norms
             if not (m == "rrf" and n == "borda")]  # refused: rrf reads ranks only
    lists = make_lists(args.queries, args.hits, args.seed)
    before = load_baseline(args.baseline) if args.baseline else None
    t = time.perf_counter()
    runs = ranx_runs(lists)
    sample = ranx_runs(lists, 5)
    for method, norm in cases:  # compile (or load) ranx's kernels
        ranx_call(sample, method, norm)
    print(f"{args.queries:,} queries x {len(NAMES)} lists x {args.hits} hits; ranx runs built and "
          f"warmed in {time.perf_counter() - t:.0f} s", flush=True)
    for method, norm in cases:
        mine = ours(lists, method, norm)
        worst = check(mine, ranx_call(runs, method, norm), args.queries, args.check_every)
        same = "" if before is None else (
            "; baseline identical" if ours(lists, method, norm, before) == mine
            else "; BASELINE DIFFERS")
        print(f"  values {method:8s}{norm or 'none':8s} max |diff| vs ranx {worst:.1e}{same}",
              flush=True)
        del mine
    figures: dict[str, dict[str, list[Any]]] = {f"{m}/{n or 'none'}": {} for m, n in cases}
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for method, norm in cases:
            tools: list[tuple[str, Any]] = [
                ("ranx", partial(ranx_call, runs, method, norm)),
                ("recallwatch", partial(ours, lists, method, norm))]
            if before is not None:
                tools.append(("before", partial(ours, lists, method, norm, before)))
            for name, call in tools if r % 2 == 0 else tools[::-1]:
                wall, cpu, _ = timed(call)
                figures[f"{method}/{norm or 'none'}"].setdefault(name, []).append((wall, cpu))
        print(f"  round {r + 1} done (load {loads[-1]:.1f})", flush=True)
    loads.append(os.getloadavg()[0])
    report(figures, loads, args)


def report(figures: dict[str, dict[str, list[Any]]], loads: list[float], args: Any) -> None:
    info = machine_info(("numba",))
    info["ranx"] = version("ranx")
    print(f"\n{args.rounds} interleaved rounds, load average {min(loads):.1f}-{max(loads):.1f} on "
          f"{info['cpus']} CPUs ({info['processor']}), Python {info['python']}, numpy "
          f"{info['numpy']}, ranx {info['ranx']}, numba {info['numba']}; "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    head = f"{'method/norm':18s}{'ranx wall':>10s}{'rw wall':>9s}{'ranx cpu':>10s}{'rw cpu':>8s}"
    print(head + ("  ranx/rw (range)" if "before" not in next(iter(figures.values()))
                  else f"{'before':>8s}  ranx/rw (range)   before/rw"))
    out = {}
    for case, by in figures.items():
        wall = {n: median(w for w, _ in v) for n, v in by.items()}
        cpu = {n: median(c for _, c in v) for n, v in by.items()}
        ratios = sorted(a[0] / b[0] for a, b in zip(by["ranx"], by["recallwatch"]))
        line = (f"{case:18s}{wall['ranx']:9.2f}s{wall['recallwatch']:8.2f}s{cpu['ranx']:9.2f}s"
                f"{cpu['recallwatch']:7.2f}s")
        if "before" in by:
            line += f"{wall['before']:7.2f}s"
        cpu_ratio = median(a[1] / b[1] for a, b in zip(by["ranx"], by["recallwatch"]))
        line += f"  {median(ratios):5.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}) cpu {cpu_ratio:.2f}x"
        if "before" in by:
            before = median(a[0] / b[0] for a, b in zip(by["before"], by["recallwatch"]))
            line += f"  {before:6.2f}x"
        print(line)
        out[case] = {"wall_s": wall, "cpu_s": cpu, "ranx_over_recallwatch": ratios,
                     "ranx_over_recallwatch_cpu": cpu_ratio}
    if args.json:
        args.json.write_text(json.dumps({"command": " ".join(sys.argv), "queries": args.queries,
                                         "hits": args.hits, "loads": loads, "machine": info,
                                         "figures": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
