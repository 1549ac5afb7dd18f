"""Memory per run line of ``recallwatch eval`` on Parquet and Arrow runs and an ungrouped text run.

The kinds of run the text blocks alone do not cover: a Parquet run, an Arrow IPC file run, and a
TREC text run not grouped by query (its lines shuffled).

    .venv/bin/python benchmarks/eval_formats_bench.py
        [--kinds parquet arrow ungrouped] [--queries 10000 100000] [--depth 100] [--whole]
        [--out FILE.json]

The qrels and the run are ``unit_cost_bench.py``'s (``make_trec``: ``--queries`` queries ×
``--depth`` results, 5 judgments a query); the Parquet run holds the same rows (columns qid,
docid, score; pyarrow's default row groups), the Arrow run the same rows in an Arrow IPC file
(``pa.ipc.new_file``, record batches of ``ARROW_BATCH_ROWS`` rows), the ungrouped run the same
lines in a random order (seed 3). Each is evaluated by ``evaluate_file`` (what ``eval`` runs)
in a fresh process per size, measures ``nDCG@10 R@100 RR AP P@10``, and the memory per run line
is the growth of the peak resident memory between the two sizes divided by the growth of the
lines (see ``unit_cost_bench.py``). ``--whole``: also the same files read whole
(``evaluate(qrels, Run.read(path))``, the code path before blocks), for comparison. Speed is
what this machine gave at that moment: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _unit import begun, finish, in_process, peak_bytes, per_unit, worker_options
from unit_cost_bench import CODE, GOALS, ROOT, make_trec

MEASURES = ["nDCG@10", "R@100", "RR", "AP", "P@10"]
FILES = {"parquet": "run-{n}.parquet", "arrow": "run-{n}.arrow",
         "ungrouped": "run-{n}-shuffled.txt"}
ARROW_BATCH_ROWS = 65_536  # rows per record batch of the Arrow run


def make_runs(path: Path, n: int, depth: int, kinds: list[str]) -> None:
    make_trec(path, n, depth)
    grouped = path / f"run-{n}"
    if "parquet" in kinds or "arrow" in kinds:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from recallwatch.metrics import Run

        run = Run.from_trec(grouped, cache=False)
        table = pa.table({"qid": run.query_ids, "docid": run.doc_ids, "score": run.scores})
        if "parquet" in kinds:
            pq.write_table(table, path / FILES["parquet"].format(n=n))
        if "arrow" in kinds:
            with pa.OSFile(str(path / FILES["arrow"].format(n=n)), "wb") as sink, \
                    pa.ipc.new_file(sink, table.schema) as writer:
                for batch in table.to_batches(max_chunksize=ARROW_BATCH_ROWS):
                    writer.write_batch(batch)
    if "ungrouped" in kinds:
        lines = grouped.read_bytes().splitlines(keepends=True)
        order = np.random.default_rng(3).permutation(len(lines))
        with open(path / FILES["ungrouped"].format(n=n), "wb") as out:
            out.writelines(lines[i] for i in order)


def worker(step: str, path: Path, n: int) -> dict[str, Any]:
    from recallwatch.metrics import Qrels, Run, evaluate, evaluate_file

    kind, whole = step.removesuffix("-whole"), step.endswith("-whole")
    run_path = path / FILES[kind].format(n=n)
    before = peak_bytes()
    t0 = time.perf_counter()
    qrels = Qrels.from_trec(path / f"qrels-{n}")
    how: dict[str, Any] = {}
    if whole:
        result = evaluate(qrels, Run.read(run_path, cache=False), MEASURES)
    else:
        done = evaluate_file(qrels, run_path, MEASURES)
        result = done.result
        how = {"blocks": done.blocks, "read_whole": done.read_whole,
               "temporary_files": done.temporary_files, "note": done.note}
    took = time.perf_counter() - t0
    return {"n": n, "lines": _lines(path, n), "seconds": took,
            "peak_bytes": peak_bytes(), "peak_before_bytes": before,
            "run_bytes": run_path.stat().st_size, **how,
            "aggregate": {str(k): float(v) for k, v in result.aggregate.items()}}


def _lines(path: Path, n: int) -> int:
    """The run's lines (the grouped text run: every reading holds as many)."""
    with open(path / f"run-{n}", "rb") as f:
        return sum(1 for _ in f)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kinds", nargs="+", choices=list(FILES), default=list(FILES))
    p.add_argument("--queries", type=int, nargs=2, default=[10_000, 100_000])
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--whole", action="store_true",
                   help="also measure the same files read whole (the code path before blocks)")
    p.add_argument("--out", type=Path, default=None)
    steps = ["make", *FILES, *(f"{k}-whole" for k in FILES)]
    worker_options(p, steps)
    a = p.parse_args()
    if a.worker == "make":
        make_runs(a.path, a.n, a.depth, a.kinds)
        print("{}")
        return
    if a.worker:
        print(json.dumps(worker(a.worker, a.path, a.n)))
        return
    result = begun(code=str(CODE), depth=a.depth)
    lines = []
    agreed: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="rw-evalformats-") as tmp:
        path = Path(tmp)
        for n in a.queries:  # in a process of its own: a child's peak memory would
            # start from this process's (Linux keeps the peak across exec)
            in_process(__file__, "make", path, n, ROOT,
                       ["--depth", str(a.depth), "--kinds", *a.kinds])
        for kind in a.kinds:
            for step in [kind, *([f"{kind}-whole"] if a.whole else [])]:
                runs = [in_process(__file__, step, path, n, ROOT) for n in a.queries]
                for r in runs:  # every reading of the same rows gives the same figures
                    if agreed.setdefault(r["n"], r["aggregate"]) != r["aggregate"]:
                        raise SystemExit(f"{step} at {r['n']}: {r['aggregate']} differs from "
                                         f"{agreed[r['n']]}")
                out = {"runs": runs, **per_unit(GOALS["eval"], runs[0], runs[1], "lines")}
                result[step] = out
                for r in runs:
                    how = ("read whole" if "blocks" not in r else
                           f"{r['blocks']} blocks, {r['temporary_files']} temporary files")
                    lines.append(f"{step:16} {r['lines']:>11,} run lines  {r['seconds']:7.1f} s"
                                 f"  peak {r['peak_bytes'] / 2**20:6.0f} MiB  ({how})")
                lines.append(f"{step:16} memory per run line {out['per_unit']:.0f} B "
                             f"(goal ≤ {out['goal']:g}: {'met' if out['met'] else 'NOT met'})")
    finish(result, lines, a.out)


if __name__ == "__main__":
    main()
