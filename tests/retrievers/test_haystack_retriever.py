"""``python:MODULE:ATTR`` on a real Haystack component: Haystack's own in-memory document store
and BM25 retriever (offline, nothing downloads), gated through the component's ``run``; the gate's
top K is what the component itself answers, and its recall is computed from that list here."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.clirun import cli
from tests.retrievers.conftest import QUERIES

HAYSTACK = """
import json

from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

_store = InMemoryDocumentStore()
with open({corpus!r}, encoding="utf-8") as f:
    _rows = [json.loads(line) for line in f]
_store.write_documents([Document(content=r["text"], meta={{"chunk_id": r["id"]}})
                        for r in _rows])
retriever = InMemoryBM25Retriever(_store)
"""


@pytest.fixture
def haystack_module(kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Haystack's usage statistics are sent only from its Pipeline, never from a component's run;
    # turned off anyway, so nothing here can reach the network
    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "False")
    pytest.importorskip("haystack")
    (tmp_path / "hs_retriever.py").write_text(
        textwrap.dedent(HAYSTACK.format(corpus=str(kb / "corpus.jsonl"))), encoding="utf-8")
    return tmp_path


def test_a_haystack_component_is_gated_through_its_run(kb: Path,
                                                       haystack_module: Path) -> None:
    pipeline = haystack_module / "pipeline.yaml"
    pipeline.write_text("retrievers:\n  mine: {spec: 'python:hs_retriever:retriever', "
                        "id_field: chunk_id}\ndepth: 20\n", encoding="utf-8")
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(pipeline),
                         "--no-history", "--format", "json")
    assert code in (0, 1), err
    result = json.loads(out)
    assert result["config"]["pipeline"]["retrievers"]["mine"]["interface"] == "run"

    import sys
    sys.path.insert(0, str(haystack_module))
    try:
        from hs_retriever import retriever  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(haystack_module))
    k = json.loads((kb / "golden.yaml").read_text(encoding="utf-8"))["top_k"]
    by_id = {q["id"]: q for q in result["queries"]}
    found_any = False
    for qid, text, expected in QUERIES:
        docs = retriever.run(query=text, top_k=20)["documents"]
        own = [d.meta["chunk_id"] for d in docs][:k]
        q = by_id[qid]
        assert [t["id"] for t in q["top"]] == own
        assert [t["score"] for t in q["top"]] == pytest.approx([d.score for d in docs][:k])
        assert q["recall"] == pytest.approx(len(set(expected) & set(own)) / len(expected))
        found_any = found_any or bool(set(expected) & set(own))
    assert found_any  # BM25 over these texts finds some answers: the lists are not empty noise


def test_a_haystack_document_without_the_id_field_is_a_located_error(
        kb: Path, haystack_module: Path) -> None:
    pipeline = haystack_module / "pipeline.yaml"
    pipeline.write_text("retrievers:\n  mine: python:hs_retriever:retriever\n",
                        encoding="utf-8")
    code, _, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(pipeline),
                       "--no-history")
    assert code == 2
    assert "has no metadata field 'id' (its metadata: chunk_id)" in err
    assert "Traceback" not in err
