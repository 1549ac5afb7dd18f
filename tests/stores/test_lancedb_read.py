"""The LanceDB adapter's reads on pylance alone give what LanceDB itself gives, and never import
lancedb: the same hits, scores, versions and tags; the example gate the same report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from recallwatch.stores.lancedb import store as lancedb_adapter
from recallwatch.stores.lancedb.read import _SCAN_BLOCK
from recallwatch.stores.lancedb.store import LanceStore

from .conformance import corpus

ROOT = Path(__file__).resolve().parents[2]
KB = ROOT / "examples" / "kb"


def _through_lancedb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send every search to LanceDB's own query, as before the pylance read path."""
    monkeypatch.setattr(lancedb_adapter, "vector_index", lambda _tbl: object())


def _store_with_ties(path: Path) -> tuple[LanceStore, np.ndarray]:
    chunks, vectors = corpus(120)
    vectors[60:90] = vectors[0]  # 31 rows tie exactly: the tie rule picks among them by id
    store = LanceStore(path, create=True)
    store.upsert(chunks, vectors)
    return store, vectors


@pytest.mark.parametrize("k", [1, 5, 31, 40, 500])
def test_exact_search_on_pylance_equals_lancedb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    store, vectors = _store_with_ties(tmp_path / "kb")
    rng = np.random.default_rng(k)
    queries = np.concatenate([vectors[:3], rng.normal(size=(4, vectors.shape[1]))]).astype(
        np.float32)
    assert not store.has_index()
    for search_filter in (None, {"domain": ["laboral", "fiscal"]}):
        ours = store.search(queries, k, filter=search_filter)
        with monkeypatch.context() as m:
            _through_lancedb(m)
            theirs = store.search(queries, k, filter=search_filter)
        for a, b in zip(ours, theirs, strict=True):
            assert a.ids == b.ids
            np.testing.assert_array_equal(a.scores, b.scores)


def test_a_scan_over_several_blocks_keeps_the_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("recallwatch.stores.lancedb.read._SCAN_BLOCK", 16)
    assert _SCAN_BLOCK > 16  # the real block is larger: this test cuts the table in 8 blocks
    store, vectors = _store_with_ties(tmp_path / "kb")
    ours = store.search(vectors[:5], 37)
    _through_lancedb(monkeypatch)
    theirs = store.search(vectors[:5], 37)
    assert [h.ids for h in ours] == [h.ids for h in theirs]


def test_versions_tags_and_reads_agree_with_lancedb(tmp_path: Path) -> None:
    store, vectors = _store_with_ties(tmp_path / "kb")
    chunks, _ = corpus(130)
    store.upsert(chunks[120:], vectors[:10])
    store.delete([chunks[0].id])
    store.promote("2")
    import lancedb

    engine = lancedb.connect(str(tmp_path / "kb")).open_table("chunks")
    read = store._table()
    assert read is not None
    assert read.version == engine.version
    assert [v["version"] for v in read.list_versions()] == \
        [v["version"] for v in engine.list_versions()]
    assert [v["timestamp"] for v in read.list_versions()] == \
        [v["timestamp"] for v in engine.list_versions()]
    # the adapter reads a tag's version (pylance lists more about each tag than LanceDB)
    assert {n: t["version"] for n, t in read.tags.list().items()} == \
        {n: t["version"] for n, t in engine.tags.list().items()} == {"production": 2}
    assert store.production_version() == "2"
    assert store.count() == engine.count_rows() == 129
    assert store.checkout("1").count() == 120  # created
    old = store.checkout("2")  # the second upsert
    assert old.count() == 130 and old.current_version() == "2"


def test_reading_never_imports_lancedb(tmp_path: Path) -> None:
    store, vectors = _store_with_ties(tmp_path / "kb")
    store.promote(store.current_version())
    np.save(tmp_path / "q.npy", vectors[:3])
    code = f"""
import sys
import numpy as np
from recallwatch.stores import open_store
store = open_store("lancedb://{tmp_path}/kb")
q = np.load("{tmp_path}/q.npy")
hits = store.search(q, 5)
store.score_of(q, [["c0001"], [], ["c0002", "nope"]])
store.get(["c0001"]); store.chunks(doc_ids=["doc1"]); store.count(); store.versions()
store.production_version(); store.checkout("1").count(); store.get_meta("x")
print([h.ids for h in hits])
print("lancedb" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.splitlines()
    assert json.loads(out[0].replace("'", '"')) == [h.ids for h in store.search(vectors[:3], 5)]
    assert out[1] == "False"


@pytest.mark.slow
def test_example_gate_reports_the_same_through_either_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallwatch.acceptance.gate import run_gate
    from recallwatch.embedders import get_embedder
    from recallwatch.formats.corpus import read_corpus
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy
    from recallwatch.ops.ingest import ingest
    from recallwatch.report import to_json

    store = LanceStore(tmp_path / "kb", create=True)
    embedder = get_embedder()
    ingest(read_corpus(KB / "corpus_v1.jsonl"), store, embedder)
    golden, policy = load_golden(KB / "golden.yaml"), load_policy(KB / "policy.yaml")

    def report() -> dict[str, object]:
        result = run_gate(golden, store=LanceStore(tmp_path / "kb"), embedder=embedder,
                          policy=policy, latency_sample=len(golden.queries))
        out: dict[str, object] = json.loads(to_json(result))
        for key in ("run_id", "created_at", "timings"):
            out.pop(key, None)
        cost = out.pop("cost")  # measured times differ; what is counted does not
        assert isinstance(cost, dict)
        out["cost_counted"] = (cost["queries"], cost["index_bytes"])
        return out

    ours = report()
    _through_lancedb(monkeypatch)
    assert report() == ours


def test_rows_outside_the_index_are_scanned_once_and_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .test_lancedb import _clustered

    chunks, vectors = _clustered(340)
    store = LanceStore(tmp_path / "kb", index_threshold=300, create=True)
    store.upsert(chunks[:300], vectors[:300])
    store.upsert(chunks[300:], vectors[300:])  # 40 rows outside the index (under 20 %: kept)
    tbl = store._table()
    assert tbl is not None and store.has_index() and tbl.unindexed_fragments()
    queries = vectors[290:320]  # 10 indexed rows, 20 outside
    ours = store.search(queries, 10)
    assert [h.ids[0] for h in ours] == [c.id for c in chunks[290:320]]
    truth = [set(h.ids) for h in store.search(queries, 10, exact=True)]
    monkeypatch.setattr(type(tbl), "unindexed_fragments", lambda _self: [])
    theirs = store.search(queries, 10)  # LanceDB's own search of the rows outside its index
    for a in ours:
        assert list(a.scores) == sorted(a.scores, reverse=True) and len(a.ids) == 10
    recall = [len(set(h.ids) & t) for h, t in zip(ours, truth, strict=True)]
    recall_theirs = [len(set(h.ids) & t) for h, t in zip(theirs, truth, strict=True)]
    assert sum(recall) >= sum(recall_theirs)
