"""What the benchmarks measure processes with: the peak resident memory of a process, a step run
in a fresh process per size, and the cost of one more unit of work between two sizes
(``unit_cost_bench.py`` and the other unit benchmarks); and the set-up of the benchmarks that
time whole ``recallwatch`` commands on the example knowledge base (``startup_bench.py``,
``gate_split_bench.py``): their options, the store built once, the gate's command line, a timed
child process and interleaved rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def peak_bytes(children: bool = False) -> int:
    """The peak resident memory of this process (or of its largest finished child)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss * 1024  # Linux: KiB


def in_process(script: str, step: str, path: Path, n: int, code: Path,
               extra: list[str] | None = None) -> dict[str, Any]:
    """``script --worker step`` in a fresh Python process on ``code``: its JSON answer."""
    out = subprocess.run([sys.executable, script, "--worker", step, "--path", str(path),
                          "--n", str(n), *(extra or [])], capture_output=True, text=True,
                         check=False,
                         env={**os.environ, "PYTHONPATH": str(code), "RW_BENCH_CODE": str(code)})
    if out.returncode != 0:
        raise SystemExit(f"{step} at {n}: {out.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(out.stdout)
    return answer


def worker_options(parser: argparse.ArgumentParser, steps: Iterable[str]) -> None:
    """The hidden options :func:`in_process` starts a step's fresh process with."""
    parser.add_argument("--worker", choices=list(steps), help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)


def begun(**extra: Any) -> dict[str, Any]:
    """The start of a benchmark's result: when, the command, the load, then ``extra``."""
    return {"started": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "load_average_start": list(os.getloadavg()), **extra}


def per_unit(goal: tuple[str, float | None, float], low: dict[str, Any], high: dict[str, Any],
             units: str, measure: str = "peak_bytes") -> dict[str, Any]:
    """What one more unit costs between the two sizes: ``(m₂ − m₁) / (n₂ − n₁)`` in the goal's
    unit (``goal`` = (unit's name, goal or None, bytes per unit of the name))."""
    label, target, scale = goal
    grow = (high[measure] - low[measure]) / (high[units] - low[units]) / scale
    return {"per_unit": grow, "unit": label, "goal": target,
            "met": None if target is None else grow <= target}


def finish(result: dict[str, Any], lines: list[str], out: Path | None) -> None:
    """The load at the end added to ``result`` and the printed lines; both printed, and the
    result written to ``out`` as JSON when given."""
    result["load_average_end"] = list(os.getloadavg())
    lines.append(f"load average at start {result['load_average_start'][0]:.1f}, at end "
                 f"{result['load_average_end'][0]:.1f} (2 cores, shared)")
    print("\n".join(lines))
    if out is not None:
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


# -- whole commands on the example knowledge base ----------------------------------------------
ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "examples" / "kb"
# The `recallwatch` script's entry point, as a fresh process runs it.
CLI = ("import sys; from recallwatch.__main__ import main; sys.argv[0] = 'recallwatch'; "
       "sys.exit(main())")


def command_options(description: str, folder: str) -> argparse.Namespace:
    """--rounds, --dir (default: ``folder`` in the temporary directory) and --baseline."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / folder)
    parser.add_argument("--baseline", type=Path,
                        help="another checkout of recallwatch to time the same gate with")
    return parser.parse_args()


def user_env() -> dict[str, str]:
    """The environment the children run in, as a user's: with Python's bytecode cache (an
    environment that sets ``PYTHONDONTWRITEBYTECODE`` would make every child compile
    recallwatch's modules from source; the first, untimed run writes the cache)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def example_store(folder: Path, env: Mapping[str, str]) -> str:
    """The URI of the example knowledge base (``examples/kb/corpus_v1.jsonl``) ingested into a
    LanceDB store in ``folder``, once: a later call finds it there."""
    kb = folder / "kb"
    uri = f"lancedb://{kb}?table=chunks"
    if not (kb / "chunks.lance").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", CLI, "ingest", str(KB / "corpus_v1.jsonl"),
                        "--store", uri], check=True, env=dict(env), cwd=ROOT,
                       stdout=subprocess.DEVNULL)
    return uri


def example_gate(uri: str, history: Path, *extra: str) -> list[str]:
    """The arguments of the example's gate, as ``examples/demo.sh`` runs it, then ``extra``."""
    return ["gate", str(KB / "golden.yaml"), "--store", uri, "--policy",
            str(KB / "policy.yaml"), "--history", str(history), *extra]


def timed_child(argv: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """Run ``argv`` in the checkout: its wall time, CPU time, peak RSS (``wait4``), exit code,
    output and error output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(argv), env=dict(env), stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                "rss_mb": usage.ru_maxrss / 1024, "exit": os.waitstatus_to_exitcode(status),
                "stdout": out.read().decode(errors="replace"),
                "stderr": err.read().decode(errors="replace")}


def interleaved(commands: Mapping[str, tuple[Sequence[str], Mapping[str, str]]], rounds: int
                ) -> tuple[dict[str, list[dict[str, Any]]], list[float]]:
    """Each command once a round, the order rotated from round to round (a slow moment of the
    machine falls on each in turn): every run's :func:`timed_child` figures, and the load
    average before each round and after the last."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    loads = []
    names = list(commands)
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        for name in names[r % len(names):] + names[:r % len(names)]:
            argv, env = commands[name]
            runs[name].append(timed_child(argv, env))
    loads.append(os.getloadavg()[0])
    return runs, loads
