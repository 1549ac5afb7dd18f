"""Exit codes under load: the same command, run thousands of times, must always exit the same way.

    .venv/bin/python benchmarks/exit_codes.py [--eval 2000] [--gate 500] [--workers 3]
                                              [--dir DIR] [--out FILE.json]

A pipeline obeys recallwatch's exit code (0 ACCEPT, 1 STOP, 2 input error), so a code that is
right 499 times in 500 is wrong. This runs, as separate processes and ``--workers`` at a time (the
concurrency is the load that makes shutdown races show):

- ``eval`` on a small TREC qrels/run pair, ``--per-query --format json``: must exit 0;
- ``gate`` on a results file, alternately one that passes (exit 0) and one that fails (exit 1);
- ``gate`` on a LanceDB store holding the example knowledge base's version 1: exit 1 (STOP).

Each wrong exit code is printed with the first lines of its stderr, and the totals are written to
``--out`` with the machine record. The script exits 1 if any exit code was wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
KB = ROOT / "examples" / "kb"
RW = [str(Path(sys.executable).parent / "recallwatch")]


def _write_inputs(work: Path) -> dict[str, Path]:
    import yaml

    from recallwatch.formats.golden import load_golden

    qrels, run = work / "qrels.txt", work / "run.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d4 2\nq2 0 d3 2\n", encoding="utf-8")
    run.write_text(
        "q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d4 3 0.4 t\nq2 Q0 d3 1 0.4 t\n",
        encoding="utf-8",
    )
    golden = load_golden(KB / "golden.yaml")
    passing, failing = work / "pass.jsonl", work / "fail.jsonl"
    with passing.open("w", encoding="utf-8") as ok, failing.open("w", encoding="utf-8") as bad:
        for i, q in enumerate(golden.queries):
            expected = list(q.expected)
            # every expected chunk on top, then fillers scoring just below: no noise, recall 1
            ranked = [{"id": e, "score": 1.0} for e in expected]
            ok.write(json.dumps({"query_id": q.id, "results": ranked}) + "\n")
            # the first query loses its expected chunks: recall 0, a Gold-free failure above 5 %
            lost = ranked if i else [{"id": "nothing_relevant", "score": 1.0}]
            bad.write(json.dumps({"query_id": q.id, "results": lost}) + "\n")
    policy = work / "policy.yaml"
    policy.write_text(
        yaml.safe_dump({"noise_ceiling": 0.9, "other_failures_allowed": 0.0}), encoding="utf-8"
    )
    return {"qrels": qrels, "run": run, "pass": passing, "fail": failing, "policy": policy}


def _commands(args: argparse.Namespace, files: dict[str, Path], store: str | None) -> list[
    tuple[str, list[str], int]
]:
    jobs: list[tuple[str, list[str], int]] = []
    eval_cmd = [*RW, "eval", str(files["qrels"]), str(files["run"]), "-m", "R@2", "-m", "nDCG@10",
                "--per-query", "--format", "json"]
    jobs += [("eval", eval_cmd, 0)] * args.eval
    golden = str(KB / "golden.yaml")
    for i in range(args.gate):
        if store is not None and i % 2:
            jobs.append(("gate store", [*RW, "gate", golden, "--store", store, "--policy",
                                        str(KB / "policy.yaml"), "--format", "json"], 1))
        else:
            which = "pass" if i % 4 == 0 else "fail"
            jobs.append((f"gate results {which}", [*RW, "gate", golden, "--results",
                                                   str(files[which]), "--policy",
                                                   str(files["policy"]), "--format", "json"],
                         0 if which == "pass" else 1))
    return jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--eval", type=int, default=2000, help="eval runs (default 2000)")
    parser.add_argument("--gate", type=int, default=500, help="gate runs (default 500)")
    parser.add_argument("--workers", type=int, default=3, help="processes at a time (default 3)")
    parser.add_argument("--dir", type=Path, help="working directory (default: a temporary one)")
    parser.add_argument("--no-store", action="store_true", help="skip the LanceDB store gate")
    parser.add_argument("--out", type=Path, help="write the totals here as JSON")
    args = parser.parse_args()

    from recallwatch.bench.sweep import machine_info

    work = args.dir or Path(tempfile.mkdtemp(prefix="rw-exit-codes-"))
    work.mkdir(parents=True, exist_ok=True)
    files = _write_inputs(work)
    store = None
    if not args.no_store and args.gate > 1:
        store = f"lancedb://{work / 'kb'}?table=chunks"
        subprocess.run([*RW, "ingest", str(KB / "corpus_v1.jsonl"), "--store", store],
                       check=True, capture_output=True)
    jobs = _commands(args, files, store)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(job: tuple[str, list[str], int]) -> tuple[str, int, int, str]:
        name, cmd, want = job
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
        return name, want, proc.returncode, proc.stderr

    started = time.perf_counter()
    wrong: list[dict[str, Any]] = []
    totals: Counter[str] = Counter()
    with ThreadPoolExecutor(args.workers) as pool:
        for name, want, got, stderr in pool.map(run, jobs):
            totals[name] += 1
            if got != want:
                wrong.append({"command": name, "expected": want, "got": got,
                              "stderr": stderr.strip().splitlines()[-3:]})
                print(f"WRONG {name}: expected exit {want}, got {got}: {stderr.strip()[-300:]}",
                      flush=True)
    seconds = time.perf_counter() - started
    summary = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "runs": dict(totals),
        "wrong_exit_codes": len(wrong),
        "wrong": wrong,
        "workers": args.workers,
        "seconds": round(seconds, 1),
        "machine": machine_info(packages=("pyarrow", "lancedb", "numpy")),
    }
    for name, count in sorted(totals.items()):
        print(f"{name:22} {count:6d} runs")
    print(f"wrong exit codes: {len(wrong)} of {sum(totals.values())} in {seconds:.0f} s "
          f"({args.workers} at a time)")
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
