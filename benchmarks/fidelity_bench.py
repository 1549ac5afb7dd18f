"""Fidelity of the benchmark harness: does measuring change what is measured?

1. hnswlib QPS at a fixed ef through the harness (``time_single`` over the ``hnswlib`` engine)
   must be within 5 % of a direct tight loop over the same hnswlib index.
2. Exact ground truth (``ground_truth``, query blocks) must reach >= 0.9x the throughput of raw
   faiss flat search (``IndexFlatIP.add`` + one ``search`` of every query).

Threads are pinned to 1 (BLAS through the environment before numpy loads, faiss explicitly).
Measurements alternate harness/direct every ``BLOCK`` queries for ``ROUNDS`` rounds and compare
the best rounds (the least disturbed by other processes; medians are reported too), because the
machine may be shared. Run: ``.venv/bin/python benchmarks/fidelity_bench.py [N] [D] [NQ]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import faiss  # noqa: E402
import numpy as np  # noqa: E402

from recallwatch.bench.datasets import synthetic  # noqa: E402
from recallwatch.bench.engines import make_engine  # noqa: E402
from recallwatch.bench.exact_knn import ground_truth  # noqa: E402
from recallwatch.bench.measure import time_single  # noqa: E402
from recallwatch.bench.sweep import machine_info  # noqa: E402

ROUNDS = 7
BLOCK = 50
EF = 64
K = 10


def main() -> None:
    n, d, nq = (int(a) for a in (sys.argv[1:4] + ["100000", "128", "1000"][len(sys.argv[1:4]):]))
    faiss.omp_set_num_threads(1)
    data = synthetic(n, d, queries=nq, seed=0)
    xb, xq = data.base, data.queries

    engine = make_engine("hnswlib", M=16, ef_construction=100)
    engine.set_threads(1)
    t0 = time.perf_counter()
    engine.build(xb, "ip")
    build = time.perf_counter() - t0
    engine.set_query_params({"ef": EF})
    index = engine.index  # the very same index for the direct loop

    def direct(block: np.ndarray) -> float:
        start = time.perf_counter()
        for q in block:
            index.knn_query(q, k=K)
        return time.perf_counter() - start

    for q in xq[:20]:
        index.knn_query(q, k=K)
    # alternate harness and direct every BLOCK queries, so that a burst of load from other
    # processes hits both sides alike; compare best-of-rounds (least disturbed) and medians
    harness_qps, direct_qps = [], []
    for _ in range(ROUNDS):
        spent_h = spent_d = 0.0
        for start in range(0, nq, BLOCK):
            block = xq[start:start + BLOCK]
            spent_h += time_single(engine, block, K, warmup=0)[0].wall_seconds
            spent_d += direct(block)
        harness_qps.append(nq / spent_h)
        direct_qps.append(nq / spent_d)
    h, dq = max(harness_qps), max(direct_qps)
    med = float(np.median(harness_qps)) / float(np.median(direct_qps))

    def ours() -> float:
        start = time.perf_counter()
        ground_truth(xb, xq, 100, "ip")
        return nq / (time.perf_counter() - start)

    def raw() -> float:
        start = time.perf_counter()
        flat = faiss.IndexFlatIP(d)
        flat.add(xb)
        flat.search(xq, 100)
        return nq / (time.perf_counter() - start)

    ours_qps, raw_qps = [], []
    for _ in range(3):
        ours_qps.append(ours())
        raw_qps.append(raw())
    o, r = max(ours_qps), max(raw_qps)
    report = {
        "data": data.describe(), "threads": "1 (BLAS env + faiss.omp_set_num_threads)",
        "hnswlib": {"ef": EF, "k": K, "build_seconds": build, "harness_qps": harness_qps,
                    "direct_qps": direct_qps, "best_ratio": h / dq, "median_ratio": med,
                    "pass": abs(h / dq - 1) <= 0.05},
        "ground_truth": {"k": 100, "ours_qps": ours_qps, "raw_faiss_qps": raw_qps,
                         "best_ratio": o / r,
                         "median_ratio": float(np.median(ours_qps) / np.median(raw_qps)),
                         "pass": o / r >= 0.9},
        "machine": machine_info(),
    }
    print(json.dumps(report, indent=2))
    sys.exit(0 if report["hnswlib"]["pass"] and report["ground_truth"]["pass"] else 1)


if __name__ == "__main__":
    main()
