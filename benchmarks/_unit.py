"""What ``unit_cost_bench.py`` measures every step with: the peak resident memory of a process,
a step run in a fresh process per size, and the cost of one more unit of work between two sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterable
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
