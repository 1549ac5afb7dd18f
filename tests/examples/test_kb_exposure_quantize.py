"""Exposure and quantization on the example knowledge base, on real indexes built from it: a
LanceDB store with an ANN index (IVF_HNSW_SQ, built past a threshold of 100 rows) and a pgvector
copy of the same chunks and vectors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.stores.lancedb.store import LanceStore
from tests.clirun import wide_cli as cli

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
pytestmark = pytest.mark.slow  # embeds the knowledge base and its golden queries


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("kb")
    store = f"lancedb://{tmp / 'kb'}?table=chunks&index_threshold=100"
    for part in ("corpus_v1.jsonl", "fix_v2.jsonl"):
        code, _, err = cli("ingest", str(KB / part), "--store", store, "--no-progress")
        assert code == 0, err
    code, out, err = cli("gate", str(KB / "golden.yaml"), "--store", store, "--policy",
                         str(KB / "policy.yaml"), "--no-history", "--format", "json",
                         "--run-date", "2025-06-01")
    assert code in (0, 1), err
    report = tmp / "v2.json"
    report.write_text(out, encoding="utf-8")
    return {"store": store, "report": report, "tmp": tmp}


def test_the_store_serves_from_an_ann_index(kb: dict[str, Any]) -> None:
    state = LanceStore.open(kb["store"]).index_state()
    assert state is not None and state.index_type == "IVF_HNSW_SQ"


def test_exposure_by_domain_on_the_knowledge_base(kb: dict[str, Any]) -> None:
    code, out, err = cli("history", "groups", str(kb["report"]), "--by-chunk", "domain", "--store",
                         kb["store"], "--format", "json")
    assert code == 0, err
    rep = json.loads(out)
    groups = {g["group"]: g for g in rep["groups"]}
    # the corpus's domains as the example's README counts them
    assert {g: v["chunks"] for g, v in groups.items()} == {
        "legal": 45, "finanzas": 37, "rrhh": 37, "procedimientos": 32, "faq": 14}
    assert rep["corpus_chunks"] == 165 and rep["queries"] == 78 and rep["k"] == 10
    assert sum(g["exposure"]["value"] for g in groups.values()) == pytest.approx(1.0)
    for g in groups.values():
        assert g["exposure"]["low"] <= g["exposure"]["value"] <= g["exposure"]["high"]
    # the exposure is the share of top-10 slots: recount it from the gate report
    run = json.loads(Path(kb["report"]).read_text())
    lines = (KB / "corpus_v1.jsonl").read_text(encoding="utf-8").splitlines()
    domain = {c["id"]: c["domain"] for c in map(json.loads, lines)}
    slots = Counter(domain[t["id"]] for q in run["queries"] for t in q["top"])
    total = sum(slots.values())
    for name, g in groups.items():
        assert g["exposure"]["value"] == pytest.approx(slots[name] / total)


def test_exposure_by_year_of_the_documents(kb: dict[str, Any]) -> None:
    code, out, err = cli("history", "groups", str(kb["report"]), "--by-chunk", "valid_from",
                         "--corpus",
                         str(KB / "corpus_v1.jsonl"))
    assert code == 0, err
    assert "exposure by valid_from" in out
    assert {line.split()[0] for line in out.splitlines()[3:]} == {
        "2019", "2021", "2023", "2024", "2025"}


def test_quantize_the_knowledge_base_vectors(kb: dict[str, Any]) -> None:
    version = LanceStore.open(kb["store"]).current_version()
    code, out, err = cli("bench", "quantize", "--store", kb["store"], "--sample", "30",
                         "--depths", "10,20,50", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["n"], doc["d"], doc["nq"]) == (135, 512, 30)
    rows = {r["representation"]: r for r in doc["rows"]}
    assert rows["float32"]["recall"] == 1.0
    assert rows["binary (sign)"]["bytes_per_vector"] == 64
    native = {r["representation"]: r for r in doc["store_indexes"]}
    assert native["LanceDB IVF_HNSW_SQ"]["recall"] is not None
    # 135 rows are too few for LanceDB to train product quantization: said, not measured
    assert native["LanceDB IVF_PQ, refine_factor 1"]["recall"] is None
    assert LanceStore.open(kb["store"]).current_version() == version


def test_the_same_on_a_pgvector_copy(kb: dict[str, Any], postgres_server: Any,
                                     pg_env: None) -> None:
    from recallwatch.stores.pgvector import PgVectorStore

    source = LanceStore.open(kb["store"])
    chunks = source.chunks()
    vectors = source.vectors([c.id for c in chunks])
    uri = postgres_server.uri("kb_copy")
    copy = PgVectorStore.open(uri, create=True)
    copy.upsert(chunks, np.asarray(vectors))
    copy.close()
    code, out, err = cli("bench", "quantize", "--store", uri, "--sample", "30", "--depths",
                         "10", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    native = {r["representation"]: r for r in doc["store_indexes"]}
    assert set(native) == {"pgvector halfvec", "pgvector bit (sign, Hamming)"}
    # float16 loses nothing here that our own float16 cast does not
    ours = {r["representation"]: r for r in doc["rows"]}["float16"]["recall"]
    assert native["pgvector halfvec"]["recall"] == pytest.approx(ours, abs=1 / 300)
    code, out, err = cli("history", "groups", str(kb["report"]), "--by-chunk", "domain",
                         "--store", uri,
                         "--format", "json")
    assert code == 0, err
    code2, out2, err2 = cli("history", "groups", str(kb["report"]), "--by-chunk", "domain",
                            "--store",
                         kb["store"], "--format", "json")
    assert code2 == 0, err2
    assert json.loads(out)["groups"] == json.loads(out2)["groups"]
