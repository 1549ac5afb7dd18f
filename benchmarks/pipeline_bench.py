"""The overhead of recallwatch around a retriever: a gate through ``python:MODULE:ATTR`` wrapping
a store, against the same store searched without recallwatch.

    .venv/bin/python benchmarks/pipeline_bench.py [--chunks 100000] [--queries 1000] [--dim 64]
                                                  [--depth 100] [--dir DIR] [--out FILE.json]
                                                  [--no-alone]

1. Builds a LanceDB store of ``--chunks`` random unit vectors (seeded; no embedding model, so
   the figure is recallwatch's own cost, not a model's) and ``--queries`` query vectors, each
   expecting its exact nearest chunk.
2. Times the store's own batched search of every query (``store.search(all vectors, depth)``),
   and the retriever function alone, called once per query as a gate calls it.
3. Times ``recallwatch gate GOLDEN --pipeline FILE --no-history`` in this process (a pipeline of
   that one ``python:`` retriever), end to end: loading, searching, scoring, policy, diagnosis,
   the report; after a first gate on 5 queries, which imports the modules a gate uses (its time
   is printed too).

Overhead = (gate − the time spent inside the retriever function during that gate) / gate: what
recallwatch adds around the retriever, as a share of the gate's time. Both are measured in the
same run, so a busy machine slows both alike. The store's batched search and the retriever's
time alone (every query once, outside recallwatch) are printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RETRIEVER = '''
import numpy as np
from recallwatch.stores import open_store

import time

_store = open_store({uri!r})
_vectors = np.load({vectors!r})
SPENT = [0.0, 0]  # seconds inside this function, and calls, since the last reset


def search(query, k):
    """A query is "q<row>": its vector is that row (a stand-in for an embedding model)."""
    t0 = time.perf_counter()
    hits = _store.search(_vectors[int(query[1:])][None, :], k)[0]
    out = list(zip(hits.ids, hits.scores.tolist()))
    SPENT[0] += time.perf_counter() - t0
    SPENT[1] += 1
    return out
'''


def build(work: Path, chunks: int, queries: int, dim: int) -> tuple[str, Path]:
    from recallwatch.records import Chunk
    from recallwatch.stores import open_store

    rng = np.random.default_rng(7)
    uri = f"lancedb://{work / 'db'}?table=chunks&index_threshold={10 * chunks}"
    vectors_path = work / "queries.npy"
    if (work / "db").exists() and vectors_path.exists():
        return uri, vectors_path
    store = open_store(uri, create=True)
    try:
        for start in range(0, chunks, 20_000):
            n = min(20_000, chunks - start)
            vecs = rng.standard_normal((n, dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            store.upsert([Chunk(f"c{start + i}", f"chunk {start + i}") for i in range(n)], vecs)
    finally:
        store.close()
    q = rng.standard_normal((queries, dim)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    np.save(vectors_path, q)
    return uri, vectors_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=ROOT / ".bench" / "pipeline")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--no-alone", action="store_true",
                        help="skip timing the retriever alone outside recallwatch (one more "
                        "call per query; it is printed for comparison, not in the overhead)")
    args = parser.parse_args()
    work = args.dir / f"{args.chunks}x{args.dim}-{args.queries}"
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    uri, vectors_path = build(work, args.chunks, args.queries, args.dim)
    build_s = time.perf_counter() - t0

    from recallwatch.stores import open_store

    vectors = np.load(vectors_path)
    store = open_store(uri)
    try:
        t0 = time.perf_counter()
        batched = store.search(vectors, args.depth)
        batched_s = time.perf_counter() - t0
    finally:
        store.close()
    golden = {"name": "bench", "version": "1", "top_k": 10, "queries": [
        {"id": f"q{i}", "text": f"q{i}", "expected": [hits.ids[0]]}
        for i, hits in enumerate(batched)]}
    (work / "golden.json").write_text(json.dumps(golden), encoding="utf-8")
    (work / "bench_retriever.py").write_text(
        RETRIEVER.format(uri=uri, vectors=str(vectors_path)), encoding="utf-8")
    (work / "pipeline.yaml").write_text(
        f"retrievers:\n  store: python:bench_retriever:search\ndepth: {args.depth}\n",
        encoding="utf-8")

    sys.path.insert(0, str(work))
    import bench_retriever  # type: ignore[import-not-found]

    alone_s: float | None = None
    if not args.no_alone:
        t0 = time.perf_counter()
        for i in range(args.queries):
            bench_retriever.search(f"q{i}", args.depth)
        alone_s = time.perf_counter() - t0
    bench_retriever.SPENT[:] = [0.0, 0]

    from typer.testing import CliRunner

    from recallwatch.cli import app

    # a first gate on 5 queries imports what a gate imports: the timed run is the work alone
    (work / "warm.json").write_text(json.dumps({**golden, "queries": golden["queries"][:5]}),
                                    encoding="utf-8")
    t0 = time.perf_counter()
    CliRunner().invoke(app, ["gate", str(work / "warm.json"), "--pipeline",
                             str(work / "pipeline.yaml"), "--no-history", "--format", "json"])
    warm_s = time.perf_counter() - t0
    bench_retriever.SPENT[:] = [0.0, 0]
    t0 = time.perf_counter()
    r = CliRunner().invoke(app, ["gate", str(work / "golden.json"), "--pipeline",
                                 str(work / "pipeline.yaml"), "--no-history", "--format", "json"])
    gate_s = time.perf_counter() - t0
    if r.exit_code not in (0, 1):
        raise SystemExit(f"the gate failed (exit {r.exit_code}): {r.stderr}")
    result = json.loads(r.stdout)
    inside_s, calls = bench_retriever.SPENT
    overhead = (gate_s - inside_s) / gate_s
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": os.getloadavg(), "cpus": os.cpu_count(),
        "chunks": args.chunks, "queries": args.queries, "dim": args.dim, "depth": args.depth,
        "retriever_calls": calls, "build_s": round(build_s, 2),
        "store_batched_search_s": round(batched_s, 3),
        "retriever_alone_s": None if alone_s is None else round(alone_s, 3),
        "gate_s": round(gate_s, 3),
        "retriever_inside_gate_s": round(inside_s, 3), "warm_up_gate_5_queries_s": round(warm_s, 3),
        "overhead_share_of_gate": round(overhead, 4),
        "gate_recall": result["aggregate"]["mean_recall"],
    }
    print(json.dumps(figures, indent=2))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
