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


def test_a_stored_graph_opens_and_searches_without_a_word_on_stderr(
        engine: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    store = open_store(f"{engine}://{tmp_path}/ix", create=True)
    chunks, vectors = corpus(50)
    store.upsert(chunks, vectors)
    before = store.search(vectors[:3], 5)
    store.close()
    capfd.readouterr()
    again = open_store(f"{engine}://{tmp_path}/ix")
    assert [h.ids for h in again.search(vectors[:3], 5)] == [h.ids for h in before]
    assert capfd.readouterr().err == ""  # hnswlib warned when loading into a built index


def test_corrupt_sidecar_is_a_store_error(engine: str, tmp_path: Path) -> None:
    store = open_store(f"{engine}://{tmp_path}/ix", create=True)
    chunks, vectors = corpus(10)
    store.upsert(chunks, vectors)
    store.close()
    (tmp_path / "ix" / "index__v1.parquet").write_bytes(b"not parquet")
    with pytest.raises(StoreError, match="cannot read sidecar"):
        open_store(f"{engine}://{tmp_path}/ix").count()


def test_a_graph_that_reaches_fewer_than_k_returns_what_it_reaches(tmp_path: Path) -> None:
    """hnswlib refuses a whole batch when one query's graph walk reaches fewer than k points (a
    weak graph under a filter): the store answers every query with the points it reached, all
    within the filter, as faiss does, so a weak index is measured as weak instead of failing."""
    pytest.importorskip("hnswlib")
    import hnswlib

    store = open_store(f"hnswlib://{tmp_path}/ix?m=2&ef_construction=4&ef=10", create=True)
    chunks, _ = corpus(2000)
    vectors = np.random.default_rng(0).normal(size=(2000, 16)).astype(np.float32)
    store.upsert(chunks, vectors)
    store.promote(store.current_version())
    allowed = {c.doc_id for c in chunks[::97]}
    queries = np.random.default_rng(1).normal(size=(50, 16)).astype(np.float32)
    # the library itself gives up on this batch
    bare = hnswlib.Index(space="ip", dim=16)
    bare.init_index(max_elements=2000, M=2, ef_construction=4)
    bare.add_items(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), np.arange(2000))
    bare.set_ef(10)
    keep = set(range(0, 2000, 97))
    with pytest.raises(RuntimeError):
        bare.knn_query(queries, k=len(keep), filter=keep.__contains__)
    rows = 4 * len(allowed)  # four chunks per document: ask for every row the filter allows
    hits = store.search(queries, rows, filter={"doc_id": sorted(allowed)})
    assert len(hits) == 50
    assert all(0 < len(h.ids) <= rows for h in hits) and min(len(h.ids) for h in hits) < rows
    by_id = {c.id: c.doc_id for c in chunks}
    assert all(by_id[i] in allowed for h in hits for i in h.ids)


@pytest.mark.parametrize("value", [{"$in": ["doc1"]}, 3, None, [], ["doc1", 2]])
def test_a_filter_value_that_is_not_strings_is_refused(tmp_path: Path, value: object) -> None:
    """A filter value is a string or a list of strings; anything else (a query-language dict,
    a number) is named in an error instead of matching nothing or raising a traceback."""
    from recallwatch.errors import UsageError

    store = open_store(f"hnswlib://{tmp_path}/ix", create=True)
    with pytest.raises(UsageError, match="filter on 'doc_id': expected a string or a non-empty"):
        store.search(np.ones((1, 16), dtype=np.float32), 3, filter={"doc_id": value})
