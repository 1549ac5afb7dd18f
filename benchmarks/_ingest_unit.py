"""``unit_cost_bench.py --only ingest``: the ``recallwatch ingest`` command, as a process of its
own, at two sizes, with the vectors given (``--precomputed``) or embedded by the model in the
command's process (``--engine local``) or on a local Ray the command starts (``--engine ray``).

The command runs under a small wrapper (:data:`_WRAPPER`) that writes, as the process exits, the
peak resident memory of **that process alone** (``getrusage(RUSAGE_SELF)``): with Ray, the
process waits for Ray's processes it started, and the system's figure for it (``wait4``) would
then be the largest of them all. That figure is kept too (``peak_with_children_bytes``). The Ray
processes' own peaks (``VmHWM``) are sampled every :data:`SAMPLE_SECONDS` while the command runs
(a lower bound: a process's growth after its last sample is missed), and every process seen is
checked gone once the command has ended.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _unit import in_process, peak_bytes, per_unit

INGEST_EMBEDDER = "use-multilingual"  # the default embedder: the store records it for queries
INGEST_GOAL = ("B per row", None, 1.0)
ENGINES = ("precomputed", "local", "ray")
SAMPLE_SECONDS = 0.5

# ``python -c _WRAPPER PEAK_FILE WINDOW ARGS…``: ``recallwatch ARGS…`` in this process, its own
# peak written to PEAK_FILE (KiB) at exit; WINDOW > 0 sets RayEmbedding's window (texts per Ray
# run), a field of the dataclass the command builds with its default.
_WRAPPER = """\
import atexit, resource, runpy, sys
peak_file, window = sys.argv[1], int(sys.argv[2])
atexit.register(lambda: open(peak_file, "w").write(
    str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))
if window > 0:
    from recallwatch.scale.ray_engine import RayEmbedding
    RayEmbedding.__init__.__defaults__ = (None, window)
sys.argv = ["recallwatch", *sys.argv[3:]]
runpy.run_module("recallwatch", run_name="__main__", alter_sys=True)
"""


def make_corpus(path: Path, n: int, dim: int, vectors: bool = True) -> None:
    """A seeded corpus of ``n`` chunks, its vectors in the ``.npy`` beside it (bring your own)."""
    rng = np.random.default_rng(3)
    with open(path / f"corpus-{n}.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": f"c{i:08d}", "text": f"chunk {i} " + "texto " * 40})
                     + "\n" for i in range(n))
    if vectors:
        np.save(path / f"corpus-{n}.npy", rng.standard_normal((n, dim), dtype=np.float32))


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(entry))
    return out


def _sample(root: int, seen: dict[int, tuple[str, int]]) -> None:
    """Every process under ``root``: its name and the largest VmHWM (KiB) seen, into ``seen``."""
    children, todo = _children(), [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            todo.append(pid)
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    name = f.read().split(b"\0")[0].decode(errors="replace")
                with open(f"/proc/{pid}/status", encoding="utf-8") as f:
                    hwm = next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")),
                               0)
            except OSError:
                continue
            name = (name.rsplit("/", 1)[-1] or "?")[:60]
            old = seen.get(pid, (name, 0))
            # a process's first name is kept: an exiting one shows an empty command line
            seen[pid] = (old[0] if old[0] != "?" else name, max(hwm, old[1]))


def _still_running(seen: dict[int, tuple[str, int]]) -> list[str]:
    """The processes seen under the command that still run (same pid, same name, not zombie)."""
    left = []
    for pid, (name, _) in seen.items():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                now = f.read().split(b"\0")[0].decode(errors="replace")
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (now.rsplit("/", 1)[-1] or "?")[:60] == name and state != "Z":
            left.append(f"{pid} {name}")
    return left


def ingest_worker(path: Path, n: int, engine: str, workers: int, window: int) -> dict[str, Any]:
    """``recallwatch ingest`` of the corpus of ``n`` chunks into a new store with the default
    index settings, as a command of its own: its wall time, peak memory (its own, and with its
    children's), output, the Ray processes' sampled peaks and the report it stored."""
    from recallwatch.ops.ingest import REPORTS_META_KEY
    from recallwatch.stores import open_store

    options = os.environ.get("RW_BENCH_STORE_OPTIONS", "")
    uri = f"lancedb://{path / f'kb-{engine}-{n}'}?table=chunks{options}"
    how = (["--precomputed"] if engine == "precomputed" else
           ["--engine", "ray", "--workers", str(workers)] if engine == "ray" else [])
    peak_file = path / f"peak-{engine}-{n}"
    args = [sys.executable, "-c", _WRAPPER, str(peak_file), str(window if engine == "ray" else 0),
            "ingest", str(path / f"corpus-{n}.jsonl"), "--store", uri, *how,
            "--embedder", INGEST_EMBEDDER, "--history", str(path / f"h-{engine}-{n}.db"),
            "--no-progress"]
    seen: dict[int, tuple[str, int]] = {}
    t0 = time.perf_counter()
    with open(path / "out.txt", "wb") as o, open(path / "err.txt", "wb") as e:
        proc = subprocess.Popen(args, stdout=o, stderr=e,
                                env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
        while proc.poll() is None:
            _sample(proc.pid, seen)
            time.sleep(SAMPLE_SECONDS)
    took = time.perf_counter() - t0
    time.sleep(2)  # what Ray leaves behind would still run after that
    left = _still_running(seen)
    stdout = (path / "out.txt").read_text(encoding="utf-8")
    stderr = (path / "err.txt").read_text(encoding="utf-8")
    if proc.returncode != 0:
        raise SystemExit(f"ingest of {n} ({engine}) exited {proc.returncode}: {stderr[-3000:]}")
    store = open_store(uri)
    try:
        report = store.get_meta(REPORTS_META_KEY)[-1]
        state = store.index_state()  # type: ignore[attr-defined]
    finally:
        store.close()
    ray = sorted(((name, kib * 1024) for name, kib in seen.values()), key=lambda p: -p[1])
    return {"n": n, "engine": engine, "seconds": took,
            "peak_bytes": int(peak_file.read_text(encoding="utf-8")) * 1024,
            "peak_with_children_bytes": peak_bytes(children=True),
            "processes_peak_bytes": ray, "processes_left_running": left,
            "output": stdout, "stderr": stderr, "report_seconds": report["seconds"],
            "index_rebuild": report["index_rebuild"],
            "indexed_rows": None if state is None else state.indexed_rows,
            "unindexed_rows": None if state is None else state.unindexed_rows}


def _worker_lines(r: dict[str, Any], tag: str) -> list[str]:
    procs = r["processes_peak_bytes"]
    if not procs:
        return []
    top = [p for p in procs if p[0].startswith("ray::")] or procs
    names: dict[str, list[float]] = {}
    for name, b in top:
        names.setdefault(name, []).append(b / 2**20)
    shown = "; ".join(f"{name} ×{len(v)}: " + ", ".join(f"{m:.0f}" for m in v[:4]) + " MiB"
                      for name, v in list(names.items())[:4])
    return [f"{tag} processes under the command: {len(procs)}, peaks sampled every "
            f"{SAMPLE_SECONDS} s, largest {shown}; left running after the command: "
            f"{len(r['processes_left_running'])}"]


def ingest_step(a: argparse.Namespace, path: Path, lines: list[str], script: str, code: Path
                ) -> dict[str, Any]:
    """The ingestion at both sizes with each engine of ``--ingest-engine``, each run by
    ``script --worker ingest`` on ``code``: the runs and the memory per row, by engine."""
    if a.ingest_store_options:  # e.g. index_threshold=1000000: the same ingestion, no index
        os.environ["RW_BENCH_STORE_OPTIONS"] = "&" + a.ingest_store_options
    embedded = any(e != "precomputed" for e in a.ingest_engine)
    for n in a.ingest_rows:
        make_corpus(path, n, a.ingest_dim, vectors="precomputed" in a.ingest_engine)
    result: dict[str, Any] = {}
    for engine in a.ingest_engine:
        extra = ["--ingest-engine", engine, "--ingest-ray-workers", str(a.ingest_ray_workers),
                 "--ingest-window", str(a.ingest_window)]
        runs = [in_process(script, "ingest", path, n, code, extra) for n in a.ingest_rows]
        out = {"engine": engine, "dim": a.ingest_dim, "embedder": INGEST_EMBEDDER,
               "ray_workers": a.ingest_ray_workers if engine == "ray" else None,
               "window": (a.ingest_window or "default") if engine == "ray" else None,
               "runs": runs, "store_options": a.ingest_store_options,
               **per_unit(INGEST_GOAL, runs[0], runs[1], "n")}
        tag = f"ingest{' ' + engine:9}" if embedded else "ingest  "
        for r in runs:
            lines.extend(_run_lines(r, tag))
        lines.append(f"{tag} memory per row {out['per_unit']:,.0f} B (the command's own process"
                     + ("" if engine == "ray" else f"; {a.ingest_dim}-d float32 vectors: "
                        f"{4 * a.ingest_dim:,} B each") + ")")
        result[engine] = out
    return result


def _run_lines(r: dict[str, Any], tag: str) -> list[str]:
    s = r["report_seconds"]
    lines = [f"{tag} {r['n']:>9,} rows  {r['seconds']:8.1f} s  peak "
             f"{r['peak_bytes'] / 2**20:7.0f} MiB  {r['n'] / r['seconds']:,.0f} rows/s "
             "(the command, start to end); " + (
                 "no ANN index" if r["indexed_rows"] is None else
                 f"ANN index: {r['indexed_rows']:,} rows in it, "
                 f"{r['unindexed_rows']:,} outside")]
    lines.extend(f"  | {line}" for line in r["output"].splitlines())
    lines.extend(_worker_lines(r, tag))
    # the goal: the index check and rebuild shown, and no rebuild built then refused
    rebuild = r["index_rebuild"]
    thrown = rebuild is not None and rebuild["result"] is not None and not rebuild["switched"]
    shown = s["index"] < 0.005 or "index check and rebuild" in r["output"]
    r["goal_met"] = shown and not thrown
    lines.append(f"{tag} index check and rebuild {s['index']:.1f} s "
                 f"({'shown' if shown else 'NOT shown'} in the output); "
                 + ("no rebuild considered" if rebuild is None else
                    "a rebuild built and thrown away" if thrown else
                    "the rebuild switched in" if rebuild["switched"] else
                    "the rebuild refused before it was built")
                 + f" (goal: {'met' if r['goal_met'] else 'NOT met'})")
    return lines
