"""What the cache saves on a rerun of an unchanged experiment plan: the plan run twice into one
output folder, the first run building every corpus and index, the second building nothing.

    .venv/bin/python benchmarks/experiment_bench.py [--plan examples/kb/experiment.yaml]
                                                    [--out FILE.json]

Prints (and writes with --out) the wall time of each run, what each built, and the share of the
first run's time the rerun saves. The rest of a rerun is judging: every variant's questions are
searched again (one call per question for the latency), so the saving is the builds' share.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from recallwatch.experiment import load_plan, run_experiment

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", type=Path, default=ROOT / "examples" / "kb" / "experiment.yaml")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    plan = load_plan(args.plan)
    runs = []
    with tempfile.TemporaryDirectory(prefix="rw-exp-") as tmp:
        for label in ("first", "rerun"):
            start = time.perf_counter()
            result = run_experiment(plan, Path(tmp))
            seconds = time.perf_counter() - start
            built = {k: len(v) for k, v in result.built.items()}
            reused = {k: len(v) for k, v in result.reused.items()}
            runs.append({"run": label, "seconds": seconds, "built": built, "reused": reused,
                         "winner": result.winner})
            print(f"{label:<6} {seconds:7.1f} s  built {built}  from the cache {reused}")
    saving = 1 - runs[1]["seconds"] / runs[0]["seconds"]
    print(f"the rerun takes {1 - saving:.0%} of the first run's time ({saving:.0%} saved)")
    record = {"plan": str(args.plan), "variants": len(plan.all()), "runs": runs,
              "saving": saving, "machine": platform.platform(),
              "date": time.strftime("%Y-%m-%d", time.gmtime())}
    if args.out:
        args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
