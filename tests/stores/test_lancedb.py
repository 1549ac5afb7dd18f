"""LanceDB specifics beyond the shared conformance suite: URI options, the ANN index and its
agreement with exact search, exact rescoring, tags, persistence, the metadata file."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import StoreError, UsageError
from recallwatch.stores import open_store
from recallwatch.stores.base import Chunk, VectorStore
from recallwatch.stores.lancedb.store import LanceStore

from .conformance import corpus


def _clustered(n: int, dim: int = 32, seed: int = 3) -> tuple[list[Chunk], np.ndarray]:
    """Vectors around 12 centres: the structure an IVF index is built for."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, dim))
    vectors = centres[rng.integers(0, 12, n)] + 0.35 * rng.normal(size=(n, dim))
    chunks = [Chunk(id=f"c{i:05d}", text=f"t{i}", domain=("a", "b")[i % 2],
                    content_hash=f"h{i}") for i in range(n)]
    return chunks, vectors.astype(np.float32)


def test_uri_options(tmp_path: Path) -> None:
    store = open_store(f"lancedb://{tmp_path}/kb", create=True)
    assert isinstance(store, LanceStore) and isinstance(store, VectorStore)
    assert store.table_name == "chunks" and store.index_threshold == 50_000
    assert store.uri == f"lancedb://{tmp_path}/kb"
    tuned = open_store(f"lancedb://{tmp_path}/kb?table=t2&index_threshold=10&index_type=IVF_PQ"
                       "&nprobes=4&ef=64", create=True)
    assert isinstance(tuned, LanceStore)
    assert (tuned.table_name, tuned.index_threshold, tuned.index_type, tuned.nprobes, tuned.ef) \
        == ("t2", 10, "IVF_PQ", 4, 64)
    with pytest.raises(UsageError, match=r"parameter 'tabel' is unknown \(did you mean 'table'"):
        open_store(f"lancedb://{tmp_path}/kb?tabel=x")
    with pytest.raises(UsageError, match="index_threshold must be an integer, found 'many'"):
        open_store(f"lancedb://{tmp_path}/kb?index_threshold=many")
    with pytest.raises(UsageError, match="index_type must be one of IVF_HNSW_SQ, IVF_PQ"):
        open_store(f"lancedb://{tmp_path}/kb?index_type=FLAT")
    with pytest.raises(UsageError, match="has no path"):
        open_store("lancedb://")


def test_gate_on_a_wrong_path_or_table_is_its_own_error_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    LanceStore(tmp_path / "kb", create=True).upsert(*corpus(5))
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"name": "g", "queries": [
        {"id": "q1", "text": "vacaciones", "expected": ["c0001"]}]}))
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))

    def gate(uri: str) -> tuple[int, str]:
        out = CliRunner().invoke(app, ["gate", str(golden), "--store", uri, "--no-history"])
        assert "Traceback" not in out.output
        return out.exit_code, out.stderr

    assert gate("lancedb://kbx?table=chunks") == (
        2, "Error: lancedb://kbx?table=chunks: no LanceDB store at kbx (did you mean 'kb'?)\n")
    assert gate("lancedb://kb?table=chunk") == (
        2, "Error: lancedb://kb?table=chunk: no table 'chunk' (did you mean 'chunks'?); tables "
           "present: chunks\n")
    # user:password@ would have been a directory named after them
    assert gate("lancedb://rw:s3cret@kbx?table=chunks") == (
        2, "Error: store URI 'lancedb://rw:***@kbx?table=chunks': a lancedb:// store is a local "
           "path and takes no user name or password (write lancedb://./PATH for a relative path "
           "containing '@')\n")
    assert sorted(tmp_path.rglob("*")) == before  # nothing created by reading


def test_lancedb_errors_are_one_store_error_line(tmp_path: Path) -> None:
    chunks, vectors = corpus(20)
    LanceStore(tmp_path / "kb", create=True).upsert(chunks, vectors)
    for data in (tmp_path / "kb" / "chunks.lance" / "data").iterdir():
        data.unlink()  # a damaged table: LanceDB raises its own errors
    uri = f"lancedb://{tmp_path}/kb"
    store = open_store(uri)
    with pytest.raises(StoreError) as search:
        store.search(vectors[:1], 5)
    # one line, without the Rust source locations (pylance's wording: the read path is pylance)
    assert re.fullmatch(rf"{re.escape(uri)}: search failed: (lance|External) error: Not found: "
                        r"\S+\.lance", str(search.value))
    with pytest.raises(StoreError, match=rf"^{re.escape(uri)}: get failed: .*Not found: "):
        store.get([chunks[0].id])
    np.save(tmp_path / "p.npy", vectors[:3])
    out = CliRunner().invoke(app, ["ops", "monitor", "--store", uri, "--probes",
                                   str(tmp_path / "p.npy"),
                                   "--no-history"])
    assert out.exit_code == 2, out.output
    assert re.match(rf"Error: {re.escape(uri)}: search failed: (lance|External) error: Not found: ",
                    out.stderr)
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.output


def test_bad_ann_parameters_are_refused_before_lancedb_sees_them(tmp_path: Path) -> None:
    LanceStore(tmp_path / "kb", create=True).upsert(*corpus(5))
    with pytest.raises(UsageError, match=r"nprobes must be at least 1, found 0$"):
        open_store(f"lancedb://{tmp_path}/kb?nprobes=0")
    with pytest.raises(UsageError, match="refine_factor must be at least 1, found -2"):
        LanceStore(tmp_path / "kb", refine_factor=-2)


def test_empty_store_answers_without_a_table(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "kb", create=True)
    assert store.count() == 0 and store.versions() == [] and store.current_version() == "0"
    assert store.production_version() is None and store.chunks() == [] and store.get(["x"]) == {}
    hits = store.search(np.ones((2, 8), dtype=np.float32), 5)
    assert [h.ids for h in hits] == [[], []]
    assert store.ids_since("0") == []


@pytest.mark.parametrize("index_type", ["IVF_HNSW_SQ", "IVF_PQ"])
def test_ann_index_agrees_with_exact_search(tmp_path: Path, index_type: str) -> None:
    chunks, vectors = _clustered(1200)
    store = open_store(f"lancedb://{tmp_path}/kb?index_threshold=1000&index_type={index_type}"
                       "&nprobes=64&ef=200", create=True)
    assert isinstance(store, LanceStore)
    store.upsert(chunks[:600], vectors[:600])
    assert not store.has_index()  # below the threshold: flat search only
    store.upsert(chunks[600:], vectors[600:])
    assert store.has_index()
    queries = vectors[:40] + 0.2 * np.random.default_rng(4).normal(size=(40, 32)).astype(np.float32)
    exact = store.search(queries, 10, exact=True)
    ann = store.search(queries, 10)
    recall = np.mean([len(set(a.ids) & set(e.ids)) / 10 for a, e in zip(ann, exact, strict=True)])
    assert recall >= 0.9, recall
    for q, a in zip(queries, ann, strict=True):  # ANN picks candidates; scores are exact
        assert store.score_of(q[None, :], [a.ids])[0] == dict(zip(a.ids, a.scores.tolist(),
                                                                  strict=True))


def test_first_index_is_built_and_a_stale_one_left_to_the_verified_rebuild(tmp_path: Path
                                                                          ) -> None:
    chunks, vectors = _clustered(700)
    store = LanceStore(tmp_path / "kb", index_threshold=300, create=True)
    store.upsert(chunks[:300], vectors[:300])
    assert store.has_index()
    store.upsert(chunks[300:340], vectors[300:340])  # 40 of 340 unindexed (12 %): kept
    tbl = store._table()
    assert tbl is not None
    assert next(iter(tbl.list_indices())).num_unindexed_rows == 40
    # 400 of 700 unindexed: an ingestion rebuilds it, verified first (tests/ops/
    # test_autoreindex.py); a bare upsert never replaces a live index unchecked
    store.upsert(chunks[340:], vectors[340:])
    assert next(iter(tbl.list_indices())).num_unindexed_rows == 400
    # rows outside the index are scanned exactly: found all the same
    assert store.search(vectors[650:651], 1)[0].ids == ["c00650"]


def test_scores_are_exact_cosine_and_agree_with_score_of_exactly(tmp_path: Path) -> None:
    chunks, vectors = corpus(60)
    store = LanceStore(tmp_path / "kb", create=True)
    store.upsert(chunks, vectors)
    q = np.random.default_rng(1).normal(size=(3, vectors.shape[1])).astype(np.float32)
    for row, hits in zip(q, store.search(q, 60, exact=True), strict=True):
        again = store.score_of(row[None, :], [hits.ids])[0]
        assert [again[i] for i in hits.ids] == hits.scores.tolist()  # equal, not approximately
        v = vectors[[int(i[1:]) for i in hits.ids]].astype(np.float64)
        want = v @ row / np.linalg.norm(v, axis=1) / np.linalg.norm(row)
        np.testing.assert_allclose(hits.scores, want, rtol=0, atol=1e-7)


def test_ties_rank_by_id_and_filters_quote_values(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "kb", create=True)
    same = np.tile(np.array([[1.0, 0.0, 0.0]], dtype=np.float32), (4, 1))
    chunks = [Chunk(id=i, text=i, domain=d) for i, d in
              [("b", "o'brien"), ("a", "o'brien"), ("d", "x"), ("c", "o'brien")]]
    store.upsert(chunks, same)
    hits = store.search(same[:1], 4, exact=True)[0]
    assert hits.ids == sorted(hits.ids) or hits.ids == sorted(hits.ids, reverse=True)
    assert hits.ids == store.search(same[:1], 4, exact=True)[0].ids  # deterministic
    only = store.search(same[:1], 4, filter={"domain": "o'brien"}, exact=True)[0]
    assert sorted(only.ids) == ["a", "b", "c"]


def test_versions_tags_and_read_only_views(tmp_path: Path) -> None:
    chunks, vectors = corpus(30)
    store = LanceStore(tmp_path / "kb", create=True)
    store.upsert(chunks[:20], vectors[:20])
    v1 = store.current_version()
    store.upsert([replace(chunks[0], text="cambiado", content_hash="new")], vectors[:1])
    store.upsert(chunks[20:], vectors[20:])
    v3 = store.current_version()
    assert [v.version for v in store.versions()] == [v1, str(int(v1) + 1), v3]
    assert all(v.created_at is not None and v.created_at.tzinfo is not None
               for v in store.versions())
    assert store.ids_since(v1) == sorted([chunks[0].id] + [c.id for c in chunks[20:]])
    assert store.ids_since("0") == sorted(c.id for c in chunks)
    store.promote(v1)
    assert store.production_version() == v1
    assert [v.meta["tags"] for v in store.versions()] == [["production"], [], []]
    view = store.checkout(v1)
    assert view.read_only and view.current_version() == v1 and view.count() == 20
    assert view.get([chunks[0].id])[chunks[0].id].text == chunks[0].text
    assert view.production_version() == v1 and len(view.versions()) == 3
    with pytest.raises(StoreError, match=f"read-only view of version {v1}"):
        view.delete([chunks[0].id])
    with pytest.raises(UsageError, match="a LanceDB version is a number, found 'latest'"):
        store.checkout("latest")
    store.promote(v3)
    assert store.production_version() == v3


def test_persistence_across_processes_and_meta_file(tmp_path: Path) -> None:
    chunks, vectors = corpus(10)
    first = LanceStore(tmp_path / "kb", table="t", create=True)
    first.upsert(chunks, vectors)
    first.set_meta("report", {"ok": True, "ñ": [1, 2]})
    first.close()
    other = open_store(f"lancedb://{tmp_path}/kb?table=t")
    assert other.count() == 10 and other.get_meta("report") == {"ok": True, "ñ": [1, 2]}
    meta = tmp_path / "kb" / ".recallwatch" / "t.meta.json"
    assert json.loads(meta.read_text())["report"] == {"ok": True, "ñ": [1, 2]}
    assert not list(meta.parent.glob(".meta-*"))  # no temporary file left behind
    # a second handle sees writes made through the first (another process, in real life)
    first.upsert(chunks[:1], vectors[1:2])
    assert other.current_version() == first.current_version()
    with pytest.raises(StoreError, match="JSON-serialisable"):
        other.set_meta("bad", {1, 2})
    assert other.get_meta("report") == {"ok": True, "ñ": [1, 2]}  # the failed write changed nothing
    meta.write_text("{broken")
    with pytest.raises(StoreError, match="is not valid JSON"):
        other.get_meta("report")


def test_concurrent_meta_writers_lose_nothing(tmp_path: Path) -> None:
    stores = [LanceStore(tmp_path / "kb", create=True) for _ in range(4)]

    def write(n: int) -> None:
        for i in range(15):
            stores[n]._meta.update("log", lambda old, n=n, i=i: [*(old or []), f"{n}-{i}"])

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(stores[0].get_meta("log")) == sorted(f"{n}-{i}" for n in range(4)
                                                       for i in range(15))
