"""The planner checked against real indexes built at small scale: faiss (flat, IVF, HNSW),
hnswlib (HNSW) and LanceDB (its table, and its IVF_HNSW_SQ and IVF_PQ indexes).

Each row compares the planner's bytes with the bytes the library writes (faiss
``serialize_index``, hnswlib ``index_file_size``, LanceDB's files on disk) and gives the error
it may have by construction (``bound``), where one can be stated:

- file headers and per-list sizes the model leaves out: 4 KiB plus 16 bytes per IVF list;
- the bookkeeping a library keeps beyond the model's 12 bytes per HNSW vector (hnswlib: an
  8-byte label and 4-byte link counts, ``4 + 4/(M−1)`` bytes more per vector);
- chance in the HNSW levels: a level is geometric with ``P(L ≥ ℓ) = M^−ℓ``, variance
  ``M/(M−1)²``, so the upper layers' bytes over n vectors stray from their mean by at most
  ``4 sd`` (``sd = (4M + 4) × √(n M) / (M−1)``) with near certainty.

LanceDB's index files use their own layout (compressed row ids, per-partition graphs), which the
model does not describe: those rows report the error with no bound. Build time and queries per
second are measured one thread, one query at a time, and reported, never bounded: they vary with
the machine's load.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.bench.plan import Dtype, IndexKind, footprint

__all__ = ["CheckRow", "check_plan"]

EF_CONSTRUCTION, EF_SEARCH = 100, 64  # of the HNSW indexes built here (the calibration's too)
HEADER_BYTES = 4096
PER_LIST_BYTES = 16


@dataclass(frozen=True)
class CheckRow:
    library: str
    index: str
    dtype: str
    n: int
    predicted_bytes: int
    actual_bytes: int
    error: float  # (predicted − actual) / actual
    bound: float | None  # |error| this row may have by construction (None: not modelled)
    predicted_build_s: float | None
    measured_build_s: float | None
    predicted_qps: float | None
    measured_qps: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _level_spread(n: int, m: int) -> float:
    """4 standard deviations of the upper layers' total bytes (see the module docstring)."""
    return 4 * (4 * m + 4) * math.sqrt(n * m) / (m - 1)


def _qps(search: Any, queries: np.ndarray) -> float:
    search(queries[:1])
    t0 = time.perf_counter()
    for i in range(len(queries)):
        search(queries[i:i + 1])
    return len(queries) / (time.perf_counter() - t0)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _row(library: str, index: IndexKind, dtype: Dtype, n: int, d: int, *, m: int,
         nlist: int | None, rates: dict[str, Any] | None, actual: int, build_s: float | None,
         qps: float | None, bound_bytes: float | None, predicted: int | None = None) -> CheckRow:
    plan = footprint(n, d, dtype, index, m=m, nlist=nlist, rates=rates,
                     ef_construction=EF_CONSTRUCTION, ef_search=EF_SEARCH)
    bytes_ = plan.memory_bytes if predicted is None else predicted
    return CheckRow(library, index, dtype, n, bytes_, actual, (bytes_ - actual) / actual,
                    None if bound_bytes is None else bound_bytes / actual,
                    plan.build_core_seconds, build_s, plan.qps_per_core, qps)


def check_plan(n: int = 20000, d: int = 64, *, dtype: Dtype = "f32", m: int = 16,
               nlist: int | None = None, rates: dict[str, Any] | None = None,
               lancedb: bool = True, queries: int = 100, seed: int = 0) -> list[CheckRow]:
    """Build each index on ``n`` random vectors of dimension ``d`` and compare (LanceDB and
    hnswlib for float32 only: they store float32)."""
    import faiss

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    q = rng.normal(size=(queries, d)).astype(np.float32)
    lists = footprint(n, d, dtype, "ivf", nlist=nlist).params["nlist"]
    rows: list[CheckRow] = []
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        for index in ("flat", "ivf", "hnsw"):
            built, build_s = _faiss_index(faiss, index, dtype, x, lists, m)
            if dtype == "binary":
                qps = _qps(lambda v, ix=built: ix.search(v, 10), np.packbits(q > 0, axis=1))
                size = int(faiss.serialize_index_binary(built).size)
            else:
                qps = _qps(lambda v, ix=built: ix.search(v, 10), q)
                size = int(faiss.serialize_index(built).size)
            bound = HEADER_BYTES + (PER_LIST_BYTES * lists if index == "ivf" else 0) + (
                _level_spread(n, m) if index == "hnsw" else 0)
            rows.append(_row("faiss", index, dtype, n, d, m=m, nlist=lists, rates=rates,
                             actual=size, build_s=None if index == "flat" else build_s,
                             qps=qps, bound_bytes=bound))
        if dtype == "f32":
            rows.append(_hnswlib(x, q, m, rates))
    finally:
        faiss.omp_set_num_threads(threads)
    if lancedb and dtype == "f32":
        rows += _lance(x, rates)
    return rows


def _faiss_index(faiss: Any, index: str, dtype: Dtype, x: np.ndarray, lists: int,
                 m: int) -> tuple[Any, float]:
    d = x.shape[1]
    data: np.ndarray = x
    if dtype == "binary":
        data = np.packbits(x > 0, axis=1)
        built = {"flat": lambda: faiss.IndexBinaryFlat(d),
                 "ivf": lambda: faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(d), d, lists),
                 "hnsw": lambda: faiss.IndexBinaryHNSW(d, m)}[index]()
    else:
        code = {"f32": "Flat", "f16": "SQfp16", "int8": "SQ8"}[dtype]
        spec = {"flat": code, "ivf": f"IVF{lists},{code}",
                "hnsw": f"HNSW{m}" + ("" if dtype == "f32" else f"_{code}")}[index]
        built = faiss.index_factory(d, spec)
    if index == "hnsw":
        built.hnsw.efConstruction = EF_CONSTRUCTION
    t0 = time.perf_counter()
    if index == "ivf" or (dtype in ("f16", "int8")):
        built.train(data)
    built.add(data)
    build_s = time.perf_counter() - t0
    if index == "hnsw":
        built.hnsw.efSearch = EF_SEARCH
    return built, build_s


def _hnswlib(x: np.ndarray, q: np.ndarray, m: int, rates: dict[str, Any] | None) -> CheckRow:
    import hnswlib

    n, d = x.shape
    index = hnswlib.Index("l2", d)
    index.init_index(n, M=m, ef_construction=EF_CONSTRUCTION, random_seed=1)
    index.set_num_threads(1)
    t0 = time.perf_counter()
    index.add_items(x)
    build_s = time.perf_counter() - t0
    index.set_ef(EF_SEARCH)
    qps = _qps(lambda v: index.knn_query(v, 10), q)
    extra = n * (4 + 4 / (m - 1))  # hnswlib's label and link counts, beyond the model's 12 B
    return _row("hnswlib", "hnsw", "f32", n, d, m=m, nlist=None, rates=rates,
                actual=int(index.index_file_size()), build_s=build_s, qps=qps,
                bound_bytes=HEADER_BYTES + extra + _level_spread(n, m))


def _lance(x: np.ndarray, rates: dict[str, Any] | None) -> list[CheckRow]:
    import lancedb
    import pyarrow as pa
    from lancedb.index import IvfHnswSq, IvfPq

    n, d = x.shape
    out = []
    with tempfile.TemporaryDirectory(prefix="recallwatch-plan-") as tmp:
        db = lancedb.connect(tmp)
        column = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), d)
        t0 = time.perf_counter()
        table = db.create_table("t", pa.table({"vector": column}))
        write_s = time.perf_counter() - t0
        root = Path(tmp) / "t.lance"
        out.append(_row("lancedb", "flat", "f32", n, d, m=16, nlist=None, rates=rates,
                        actual=_du(root / "data"), build_s=write_s, qps=None,
                        bound_bytes=HEADER_BYTES))
        t0 = time.perf_counter()
        table.create_index("vector", config=IvfHnswSq(num_partitions=max(1, n // 100_000)))
        build_s = time.perf_counter() - t0
        hnsw_size = _du(root / "_indices")
        # LanceDB's defaults: M = 20 and int8 codes, plus an 8-byte row id per vector
        plan = footprint(n, d, "int8", "hnsw", m=20)
        out.append(_row("lancedb IVF_HNSW_SQ", "hnsw", "int8", n, d, m=20, nlist=None,
                        rates=rates, actual=hnsw_size, build_s=build_s, qps=None,
                        bound_bytes=None, predicted=plan.memory_bytes + 8 * n))
        sub = max(1, d // 16)
        lists = max(1, min(int(math.sqrt(n)), n // 256))
        t0 = time.perf_counter()
        table.create_index("vector", config=IvfPq(num_partitions=lists, num_sub_vectors=sub),
                           replace=True)
        pq_s = time.perf_counter() - t0
        # PQ codes (one byte per sub-vector) and 8-byte row ids, centroids, 256-entry codebooks:
        # a representation the planner's dtypes do not offer, so the row states its own model
        predicted = n * (sub + 8) + lists * d * 4 + 256 * d * 4
        out.append(_row("lancedb IVF_PQ", "ivf", "f32", n, d, m=16, nlist=lists, rates=rates,
                        actual=_du(root / "_indices") - hnsw_size, build_s=pq_s, qps=None,
                        bound_bytes=None, predicted=predicted))
    return out
