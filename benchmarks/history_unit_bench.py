"""Memory per unit of the run history: recording a gate run, and ``history prune``.

    .venv/bin/python benchmarks/history_unit_bench.py
        [--steps record prune] [--record-queries 1000 10000] [--record-base 5000] [--dim 128]
        [--prune-runs 2000 20000] [--keep-last 10] [--out FILE.json]

Each size runs in a fresh process (``_unit.in_process``):

* ``record``: ``unit_cost_bench._gate`` of ``--record-queries`` golden queries on a LanceDB
  store of ``--record-base`` seeded ``--dim``-d rows (``unit_cost_bench.make_store``), then
  :meth:`History.record` of that result into a new SQLite history opened beforehand. Before the
  record the garbage is collected and the process's peak resident memory is reset
  (``/proc/self/clear_refs``, so the gate's own peak is not counted); the growth is the peak
  after the record (``VmHWM``) less the resident memory just before it: what ``record`` alone
  holds at its highest (the run as a dictionary, its JSON text, the compressed copy, the query
  rows), beyond memory the process had already and reuses. Then the same result is recorded
  again (another run id, another new history) under ``tracemalloc``: the peak of the Python
  objects it allocates (SQLite's own memory not counted), whatever memory is reused. Per golden
  query: the growth of each figure between the sizes over that of the queries.
* ``prune``: a SQLite history of ``--prune-runs`` runs, each the same one-query gate result
  under its own run id, recorded through :meth:`History.record` in a setup process; then the
  command ``recallwatch history prune --history DB --keep-last N`` as a process of its own: its
  wall time, peak resident memory (``ru_maxrss`` of the finished child), the runs it removed.
  Per run: the growth of that peak between the sizes over that of the runs in the history.

Speed is what this machine gave at that moment: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

from _unit import begun, finish, in_process, peak_bytes, per_unit, worker_options
from unit_cost_bench import ROOT, _gate, make_store

STEPS = ("record", "prune")
GOALS = {"record": ("B per golden query", None, 1.0), "prune": ("B per run", None, 1.0)}


def _status(field: str) -> int:
    """A memory figure of this process from ``/proc/self/status``, in bytes."""
    with open("/proc/self/status", encoding="ascii") as f:
        found = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"/proc/self/status has no {field}")
    return int(found.group(1)) * 1024


def record_worker(path: Path, n: int) -> dict[str, Any]:
    from recallwatch.history import History
    from recallwatch.history._detail import pack

    result = _gate(path, n)
    gate_peak = peak_bytes()
    with History(path / f"record-{n}.db") as h:
        gc.collect()
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # the peak resident memory starts again from the resident now
        before = _status("VmRSS")
        t0 = time.perf_counter()
        h.record(result)
        took = time.perf_counter() - t0
        after = _status("VmHWM")
    with History(path / f"record-{n}-traced.db") as h:  # again, the Python objects counted
        gc.collect()
        tracemalloc.start()
        h.record(replace(result, run_id=f"{result.run_id}-traced"))
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    text = json.dumps(result.to_dict(), ensure_ascii=False, default=str)  # as record writes it
    return {"n": n, "seconds": took, "gate_peak_bytes": gate_peak, "rss_before_bytes": before,
            "peak_after_bytes": after, "growth_bytes": after - before,
            "traced_peak_bytes": traced,
            "json_chars": len(text), "zlib_bytes": len(pack(text))}


def make_worker(path: Path, n: int) -> dict[str, Any]:
    from recallwatch.history import History

    result = _gate(path, 1)
    t0 = time.perf_counter()
    with History(path / f"prune-{n}.db") as h:
        for i in range(n):
            h.record(replace(result, run_id=f"run-{i:07d}"))
    return {"runs": n, "seconds": time.perf_counter() - t0,
            "bytes": (path / f"prune-{n}.db").stat().st_size}


def prune_worker(path: Path, n: int, keep_last: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "recallwatch", "history", "prune", "--history",
                          str(path / f"prune-{n}.db"), "--keep-last", str(keep_last)],
                         capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"history prune exited {out.returncode}: {out.stderr[-3000:]}")
    said = re.search(r"removed (\d+) of (\d+) run", out.stdout)
    if said is None:
        raise SystemExit(f"history prune printed no count: {out.stdout[:2000]}")
    return {"n": n, "runs": int(said.group(2)), "removed": int(said.group(1)), "seconds": took,
            "peak_bytes": peak_bytes(children=True), "output": out.stdout.strip()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    p.add_argument("--record-queries", type=int, nargs=2, default=[1000, 10_000])
    p.add_argument("--record-base", type=int, default=5000)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--prune-runs", type=int, nargs=2, default=[2000, 20_000])
    p.add_argument("--keep-last", type=int, default=10)
    p.add_argument("--out", type=Path, default=None)
    worker_options(p, ["record", "make", "prune"])
    a = p.parse_args()
    if a.worker:
        print(json.dumps(record_worker(a.path, a.n) if a.worker == "record" else
                         make_worker(a.path, a.n) if a.worker == "make" else
                         prune_worker(a.path, a.n, a.keep_last)))
        return
    result = begun(code=str(ROOT), record_base=a.record_base, dim=a.dim, keep_last=a.keep_last)
    lines = []
    with tempfile.TemporaryDirectory(prefix="rw-history-") as tmp:
        path = Path(tmp)
        make_store(path, a.record_base, a.dim)
        if "record" in a.steps:
            runs = [in_process(__file__, "record", path, n, ROOT) for n in a.record_queries]
            out = {"runs": runs, **per_unit(GOALS["record"], runs[0], runs[1], "n",
                                            "growth_bytes")}
            result["record"] = out
            for r in runs:
                lines.append(f"record {r['n']:>7,} golden queries  {r['seconds']:6.2f} s  "
                             f"peak growth {r['growth_bytes'] / 2**20:6.1f} MiB over "
                             f"{r['rss_before_bytes'] / 2**20:.0f} MiB resident, traced "
                             f"{r['traced_peak_bytes'] / 2**20:.1f} MiB  (JSON "
                             f"{r['json_chars']:,} chars, compressed {r['zlib_bytes']:,} B)")
            traced = per_unit(GOALS["record"], runs[0], runs[1], "n", "traced_peak_bytes")
            out["traced"] = traced
            lines.append(f"record memory per golden query {out['per_unit']:,.0f} B (resident); "
                         f"{traced['per_unit']:,.0f} B of Python objects (tracemalloc)")
        if "prune" in a.steps:
            made = [in_process(__file__, "make", path, n, ROOT) for n in a.prune_runs]
            extra = ["--keep-last", str(a.keep_last)]
            runs = [in_process(__file__, "prune", path, n, ROOT, extra) for n in a.prune_runs]
            out = {"made": made, "runs": runs, **per_unit(GOALS["prune"], runs[0], runs[1],
                                                          "runs")}
            result["prune"] = out
            for m, r in zip(made, runs):
                lines.append(f"prune  {r['runs']:>7,} runs ({m['bytes'] / 2**20:.1f} MiB, "
                             f"recorded in {m['seconds']:.0f} s)  {r['seconds']:6.2f} s  "
                             f"peak {r['peak_bytes'] / 2**20:6.1f} MiB  removed "
                             f"{r['removed']:,}")
            lines.append(f"prune  memory per run in the history {out['per_unit']:,.0f} B")
    finish(result, lines, a.out)


if __name__ == "__main__":
    main()
