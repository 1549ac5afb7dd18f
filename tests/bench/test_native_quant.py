"""Quantization on a store's own vectors: the four representations, and the store's own
quantized indexes measured the same way (recall@k against exact float32 search), on a copy or
read-only: the store is never written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.datasets import dataset_from_spec
from recallwatch.bench.exact_knn import ground_truth, id_recall
from recallwatch.bench.native_quant import native_quantization
from recallwatch.cli import app
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore


def _vectors(n: int, d: int = 16) -> np.ndarray:
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(30, d)) * 3
    return (centres[rng.integers(0, 30, n)] + rng.normal(size=(n, d))).astype(np.float32)


def _lance(path: Path, n: int) -> str:
    uri = f"lancedb://{path}?table=t"
    store = LanceStore.open(uri, create=True)
    store.upsert([Chunk(id=f"c{i:05d}", text="") for i in range(n)], _vectors(n))
    store.close()
    return uri


@pytest.mark.slow
def test_quantize_store_measures_lancedb_indexes_on_a_copy(tmp_path: Path) -> None:
    uri = _lance(tmp_path / "kb", 1500)
    before = LanceStore.open(uri)
    version, count = before.current_version(), before.count()
    result = CliRunner().invoke(app, ["bench", "quantize", "--store", uri, "--sample", "50",
                                      "--format", "json", "--depths", "10,50"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["n"] == 1450 and doc["nq"] == 50 and doc["metric"] == "cosine"
    assert doc["rows"][0]["representation"] == "float32" and doc["rows"][0]["recall"] == 1.0
    native = {r["representation"]: r for r in doc["store_indexes"]}
    assert set(native) == {"LanceDB IVF_PQ, refine_factor 1", "LanceDB IVF_PQ, refine_factor 10",
                           "LanceDB IVF_HNSW_SQ"}
    for row in native.values():
        assert row["bytes_per_vector"] > 0 and 0.0 <= row["recall"] <= 1.0, row
    # re-ranking 10 k PQ candidates exactly keeps every true neighbour the k codes found
    assert (native["LanceDB IVF_PQ, refine_factor 10"]["recall"]
            >= native["LanceDB IVF_PQ, refine_factor 1"]["recall"])
    after = LanceStore.open(uri)
    assert (after.current_version(), after.count()) == (version, count)  # never written


@pytest.mark.slow  # LanceDB's HNSW build: about ten seconds on a busy machine
def test_quantize_store_table_names_the_indexes(tmp_path: Path) -> None:
    uri = _lance(tmp_path / "kb", 600)
    version = LanceStore.open(uri).current_version()
    result = CliRunner().invoke(app, ["bench", "quantize", "--store", uri, "--sample", "20",
                                      "--depths", "10"])
    assert result.exit_code == 0, result.output
    assert LanceStore.open(uri).current_version() == version
    assert "The store's own quantized indexes, same queries and exact truth:" in result.stdout
    assert "| LanceDB IVF_HNSW_SQ |" in result.stdout


def test_too_few_rows_for_pq_is_said_not_measured(tmp_path: Path) -> None:
    uri = _lance(tmp_path / "kb", 150)
    data = dataset_from_spec({"store": uri, "queries": {"sample": 20, "seed": 0}}, source=uri)
    truth = ground_truth(data.base, data.queries, 10, data.metric)
    rows = native_quantization(LanceStore.open(uri), data, truth, 10)
    pq = [r for r in rows if "IVF_PQ" in r.representation]
    assert pq and all(r.recall is None and r.note.startswith("not measured: LanceDB left all "
                                                              "130 rows out") for r in pq)


@pytest.mark.slow
def test_pgvector_halfvec_and_bit_match_the_same_casts_done_here(postgres_server: Any,
                                                                 pg_env: None) -> None:
    from recallwatch.stores.pgvector import PgVectorStore

    uri = postgres_server.uri("quant", "index=none")
    store = PgVectorStore.open(uri, create=True)
    n = 400
    store.upsert([Chunk(id=f"c{i:05d}", text="") for i in range(n)], _vectors(n))
    store.close()
    data = dataset_from_spec({"store": uri, "queries": {"sample": 30, "seed": 0}}, source=uri)
    truth = ground_truth(data.base, data.queries, 10, data.metric)
    store = PgVectorStore.open(uri)
    rows = {r.representation: r for r in native_quantization(store, data, truth, 10)}
    store.close()
    assert set(rows) == {"pgvector halfvec", "pgvector bit (sign, Hamming)"}
    assert rows["pgvector halfvec"].bytes_per_vector == 32 and \
        rows["pgvector bit (sign, Hamming)"].bytes_per_vector == 2
    # the bit search redone here: sign bits, Hamming distance, ties by id, base rows only
    ids = np.array(data.ids)
    base_bits, query_bits = data.base > 0, data.queries > 0
    found = np.empty((len(query_bits), 10), dtype=np.int64)
    for r, q in enumerate(query_bits):
        hamming = (base_bits != q).sum(axis=1)
        found[r] = np.lexsort((ids, hamming))[:10]
    assert rows["pgvector bit (sign, Hamming)"].recall == pytest.approx(
        float(id_recall(found, truth.ids, 10).mean()))
    # halfvec: float16 components; the cosine of the rounded vectors, ranked here
    half = data.base.astype(np.float16).astype(np.float32)
    half /= np.linalg.norm(half, axis=1, keepdims=True)
    qh = data.queries.astype(np.float16).astype(np.float32)
    qh /= np.linalg.norm(qh, axis=1, keepdims=True)
    mine = np.argsort(-(qh @ half.T), axis=1, kind="stable")[:, :10]
    expected = float(id_recall(mine, truth.ids, 10).mean())
    # PostgreSQL sums in its own order: a near tie at rank 10 may swap, one chunk in 300
    assert abs(rows["pgvector halfvec"].recall - expected) <= 1 / 300
