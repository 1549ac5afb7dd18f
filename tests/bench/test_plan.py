"""The footprint planner: its sizes are arithmetic on the shape of the data, checked against
the bytes faiss, hnswlib and LanceDB really write at small scale; its rates are measured on this
machine and kept in a file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from recallwatch.bench.plan import (
    footprint,
    hnsw_bytes_per_vector,
    index_bytes,
    parse_count,
    vector_bytes,
)
from recallwatch.bench.plan_check import check_plan
from recallwatch.bench.rates import load_rates, measure_rates, save_rates
from recallwatch.errors import InputError


def test_100m_vectors_of_768_dimensions_take_307_gb_in_float32_and_77_gb_in_int8() -> None:
    # 4 bytes and 1 byte per component; decimal gigabytes
    assert vector_bytes(100_000_000, 768, "f32") == 100_000_000 * 768 * 4 == 307_200_000_000
    assert vector_bytes(100_000_000, 768, "int8") == 76_800_000_000
    assert vector_bytes(100_000_000, 768, "f16") == 153_600_000_000
    assert vector_bytes(100_000_000, 768, "binary") == 100_000_000 * 96  # 768 bits
    plan = footprint(parse_count("100M"), 768)
    assert plan.memory_bytes == 307_200_000_000
    assert "100,000,000 × 768 × 4 B = 307.2 GB" in plan.lines[0].worked
    assert "76.8 GB" in footprint(100_000_000, 768, "int8").lines[0].worked


def test_index_overheads_follow_their_formulas() -> None:
    # HNSW: 2M links at layer 0, on average M × 1/(M−1) above it, 4 bytes each, plus 12 bytes
    assert hnsw_bytes_per_vector(16) == pytest.approx(4 * (32 + 16 / 15) + 12)
    assert index_bytes(1000, 64, "hnsw", m=16) == round(1000 * hnsw_bytes_per_vector(16))
    # IVF: an 8-byte id per vector and a float32 centroid per list (binary centroids: bits)
    assert index_bytes(1000, 64, "ivf", nlist=10) == 8000 + 10 * 64 * 4
    assert index_bytes(1000, 64, "ivf", nlist=10, dtype="binary") == 8000 + 10 * 8
    assert footprint(10_000, 8, "f32", "ivf").params["nlist"] == 400  # 4 √n
    two = footprint(1000, 64, "f32", "hnsw", replicas=2)
    assert two.lines[-1].value == 2 * two.memory_bytes  # no rates: sizes only


@pytest.mark.parametrize("dtype", ["f32", "int8", "binary"])
def test_sizes_land_within_their_bound_on_real_faiss_and_hnswlib_indexes(dtype: str) -> None:
    rows = check_plan(3000, 32, dtype=dtype, lancedb=False, queries=5)  # type: ignore[arg-type]
    libraries = {(r.library, r.index) for r in rows}
    assert {("faiss", "flat"), ("faiss", "ivf"), ("faiss", "hnsw")} <= libraries
    assert (("hnswlib", "hnsw") in libraries) == (dtype == "f32")
    for r in rows:
        assert r.error == pytest.approx((r.predicted_bytes - r.actual_bytes) / r.actual_bytes)
        # the bound: headers, per-list sizes, library bookkeeping and 4 sd of the HNSW levels
        assert r.bound is not None and abs(r.error) <= r.bound, r
    hnsw = next(r for r in rows if r.library == "faiss" and r.index == "hnsw")
    m, n = 16, 3000
    spread = 4 * (4 * m + 4) * math.sqrt(n * m) / (m - 1)  # geometric levels, variance M/(M−1)²
    assert hnsw.bound == pytest.approx((4096 + spread) / hnsw.actual_bytes)


@pytest.mark.slow
def test_lancedb_table_and_indexes_are_compared() -> None:
    rows = check_plan(3000, 32, lancedb=True, queries=5)
    lance = {r.library: r for r in rows if r.library.startswith("lancedb")}
    assert set(lance) == {"lancedb", "lancedb IVF_HNSW_SQ", "lancedb IVF_PQ"}
    table = lance["lancedb"]
    assert table.predicted_bytes == 3000 * 32 * 4
    assert table.bound is not None and abs(table.error) <= table.bound
    for r in lance.values():  # the index layouts are reported, with their error, unbounded
        assert r.actual_bytes > 0
        assert r.error == pytest.approx((r.predicted_bytes - r.actual_bytes) / r.actual_bytes)


def test_rates_are_measured_stored_and_read_back(tmp_path: Path) -> None:
    record = measure_rates(600, 16, queries=10, ef_construction=20)
    assert set(record["rates"]["scan"]) == {"f32", "f16", "int8", "binary"}
    assert all(v > 0 for v in record["rates"]["scan"].values())
    assert record["machine"]["cpus"] and record["calibration"]["n"] == 600
    path = tmp_path / "machine.json"
    save_rates(record, path)
    assert load_rates(path) == record
    assert load_rates(tmp_path / "none.json") is None
    plan = footprint(1_000_000, 128, "f32", "hnsw", rates=record)
    r = record["rates"]
    lg = math.log2(1_000_000)
    assert plan.qps_per_core == pytest.approx(1 / (lg * 128 * 64 * r["hnsw_query"]["f32"]))
    assert plan.build_core_seconds == pytest.approx(
        1_000_000 * lg * 128 * 200 * r["hnsw_build"]["f32"])
    flat = footprint(1_000_000, 128, "f16", "flat", rates=record)
    assert flat.qps_per_core == pytest.approx(1 / (1_000_000 * 128 * r["scan"]["f16"]))
    path.write_text(json.dumps({"schema": 1, "rates": {}}), encoding="utf-8")
    with pytest.raises(InputError, match="expected a rates record written by recallwatch bench"):
        load_rates(path)


@pytest.mark.parametrize("text", ["", "x", "0", "-5", "1.5", "2.5k7"])
def test_counts_that_are_not_whole_positive_numbers_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="field '--vectors': expected a positive whole count"):
        parse_count(text)


def test_counts_read_their_suffix() -> None:
    assert [parse_count(t) for t in ("100M", "1.5B", "20k", "1e8", "1_000")] == [
        100_000_000, 1_500_000_000, 20_000, 100_000_000, 1000]
