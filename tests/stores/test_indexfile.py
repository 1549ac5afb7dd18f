"""Index files + Parquet sidecar: the layout, recovery of a missing graph, bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recallwatch.errors import StoreError
from recallwatch.stores import open_store

from .conformance import brute_force, corpus

ENGINES = ["faiss", "hnswlib"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(request.param, reason="pip install 'recallwatch[bench]'")
    return str(request.param)


def test_layout_is_sidecar_plus_graph_per_version(engine: str, tmp_path: Path) -> None:
    store = open_store(f"{engine}://{tmp_path}/ix", create=True)
    chunks, vectors = corpus(40)
    store.upsert(chunks[:20], vectors[:20])
    store.promote("1")
    store.upsert(chunks[20:], vectors[20:])
    suffix = "faiss" if engine == "faiss" else "hnsw"
    names = sorted(p.name for p in (tmp_path / "ix").iterdir() if not p.name.startswith("."))
    graphs = [n for n in names if n.endswith(suffix)]
    assert "index__v1.parquet" in names and "index__v2.parquet" in names
    assert len(graphs) == 2 and "store.meta.json" in names  # one graph generation per version


def test_missing_graph_is_rebuilt_from_the_sidecar(engine: str, tmp_path: Path) -> None:
    store = open_store(f"{engine}://{tmp_path}/ix", create=True)
    chunks, vectors = corpus(200)
    store.upsert(chunks, vectors)
    q = np.random.default_rng(3).normal(size=(5, vectors.shape[1])).astype(np.float32)
    before = store.search(q, 5)
    store.close()
    for graph in (tmp_path / "ix").glob("index__v1.g*"):
        graph.unlink()  # as if the writer was killed after the sidecar's commit
    again = open_store(f"{engine}://{tmp_path}/ix")
    assert [h.ids for h in again.search(q, 5)] == [h.ids for h in before]
    assert list((tmp_path / "ix").glob("index__v1.g*"))
    truth = brute_force(chunks, vectors, q, 5)
    assert [h.ids for h in again.search(q, 5, exact=True)] == [ids for ids, _ in truth]


def test_corrupt_sidecar_is_a_store_error(engine: str, tmp_path: Path) -> None:
    store = open_store(f"{engine}://{tmp_path}/ix", create=True)
    chunks, vectors = corpus(10)
    store.upsert(chunks, vectors)
    store.close()
    (tmp_path / "ix" / "index__v1.parquet").write_bytes(b"not parquet")
    with pytest.raises(StoreError, match="cannot read sidecar"):
        open_store(f"{engine}://{tmp_path}/ix").count()
