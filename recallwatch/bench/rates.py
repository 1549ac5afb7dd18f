"""Rates of this machine for the planner, measured once and kept with the machine's record.

A rate is seconds of one core per unit of work, measured on small faiss indexes with one thread,
one query at a time (as a server answers them):

- ``scan[dtype]``: an exact scan, per vector-dimension compared (float32 ``IndexFlat``, float16
  and int8 ``IndexScalarQuantizer``, binary ``IndexBinaryFlat``);
- ``scan_batch``: the float32 scan with all the queries in one call (k-means training compares
  in batches);
- ``hnsw_build[dtype]``: per (vector × log2 n × d × efConstruction) inserted into faiss's HNSW
  (``IndexHNSWFlat``, ``IndexHNSWSQ``, ``IndexBinaryHNSW``);
- ``hnsw_query[dtype]``: per (log2 n × d × efSearch) of one search.

The record (``machine`` from :func:`recallwatch.bench.sweep.machine_info`, the calibration's
settings, the rates) is a JSON file: ``$RECALLWATCH_RATES`` if set, else
``$XDG_CACHE_HOME/recallwatch/machine.json`` (``~/.cache/recallwatch/machine.json``). Rates are
only meaningful on the machine that measured them; :func:`same_machine` tells.
"""

from __future__ import annotations

import json
import math
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._files import write_atomic
from recallwatch.errors import InputError
from recallwatch.formats.structured import read_text

__all__ = ["default_rates_path", "load_rates", "measure_rates", "same_machine", "save_rates"]

SCHEMA = 1


def default_rates_path() -> Path:
    env = os.environ.get("RECALLWATCH_RATES")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "recallwatch" / "machine.json"


def _per_query(search: Any, queries: np.ndarray) -> float:
    """Seconds per query, each searched alone (after one warm-up query)."""
    search(queries[:1])
    t0 = time.perf_counter()
    for i in range(len(queries)):
        search(queries[i:i + 1])
    return (time.perf_counter() - t0) / len(queries)


def measure_rates(n: int = 5000, d: int = 128, *, m: int = 16, ef_construction: int = 100,
                  ef_search: int = 64, queries: int = 200, seed: int = 0) -> dict[str, Any]:
    """Measure the rates on ``n`` random vectors of dimension ``d`` (a few seconds)."""
    import faiss

    from recallwatch.bench.sweep import machine_info

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    q = rng.normal(size=(queries, d)).astype(np.float32)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    lg = math.log2(n)
    try:
        scan: dict[str, float] = {}
        build: dict[str, float] = {}
        query: dict[str, float] = {}
        codes = {"f32": "Flat", "f16": "SQfp16", "int8": "SQ8"}
        qb = np.packbits(q > 0, axis=1)
        for dtype in ("f32", "f16", "int8", "binary"):
            if dtype == "binary":
                flat: Any = faiss.IndexBinaryFlat(d)
                flat.add(np.packbits(x > 0, axis=1))
                hnsw: Any = faiss.IndexBinaryHNSW(d, m)
                data: np.ndarray = np.packbits(x > 0, axis=1)
                qs: np.ndarray = qb
            else:
                flat = faiss.index_factory(d, codes[dtype])
                flat.train(x)
                flat.add(x)
                hnsw = faiss.index_factory(d, f"HNSW{m}" + ("" if dtype == "f32" else
                                                            f"_{codes[dtype]}"))
                data = x
                qs = q
                if dtype != "f32":
                    hnsw.train(x)
            scan[dtype] = _per_query(lambda v, ix=flat: ix.search(v, 10), qs) / (n * d)
            hnsw.hnsw.efConstruction = ef_construction
            t0 = time.perf_counter()
            hnsw.add(data)
            build[dtype] = (time.perf_counter() - t0) / (n * lg * d * ef_construction)
            hnsw.hnsw.efSearch = ef_search
            query[dtype] = _per_query(lambda v, ix=hnsw: ix.search(v, 10), qs) / (
                lg * d * ef_search)
        batch = faiss.IndexFlatL2(d)
        batch.add(x)
        t0 = time.perf_counter()
        batch.search(q, 10)
        scan_batch = (time.perf_counter() - t0) / (len(q) * n * d)
    finally:
        faiss.omp_set_num_threads(threads)
    return {
        "schema": SCHEMA,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(("faiss",)),
        "calibration": {"n": n, "d": d, "M": m, "efConstruction": ef_construction,
                        "efSearch": ef_search, "queries": queries, "seed": seed, "threads": 1},
        "rates": {"scan": scan, "scan_batch": scan_batch, "hnsw_build": build,
                  "hnsw_query": query},
    }


def save_rates(record: dict[str, Any], path: Path) -> None:
    write_atomic(path, json.dumps(record, indent=2) + "\n")


def load_rates(path: Path) -> dict[str, Any] | None:
    """The stored record, or None when there is none; a damaged file is an input error."""
    if not path.exists():
        return None
    text = read_text(path)  # a directory, or not UTF-8: located errors
    try:
        record = json.loads(text)
        rates = record["rates"]
        ok = (record.get("schema") == SCHEMA and isinstance(rates["scan_batch"], float)
              and all(isinstance(rates[rate][k], float) for k in ("f32", "f16", "int8", "binary")
                      for rate in ("scan", "hnsw_build", "hnsw_query"))
              and isinstance(record["calibration"]["M"], int))
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise InputError(source=path, expected="a rates record written by recallwatch bench plan "
                         "--calibrate", found="another file",
                         hint="delete it, or run recallwatch bench plan --calibrate to write it "
                              "again")
    return dict(record)


def same_machine(record: dict[str, Any]) -> bool:
    """Whether the record was measured on a machine like this one (processor and CPU count)."""
    from recallwatch.bench.sweep import machine_info

    here, there = machine_info(()), record.get("machine", {})
    return bool(here["processor"] == there.get("processor") and here["cpus"] == there.get("cpus"))
