"""Structural checks of the example knowledge base (examples/kb), without running the gate.

The end-to-end story (v1 STOP, v2 ACCEPT, v3 regression) needs the embedder and a store; these
tests only make sure the files say what the story needs and that the product's readers accept them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from recallwatch.formats.corpus import CHUNK_KINDS, GOLD_LABEL, read_corpus
from recallwatch.formats.golden import load_golden
from recallwatch.formats.policy import load_policy

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
CORPUS_FILES = ("corpus_v1.jsonl", "fix_v2.jsonl", "travel_v3.jsonl")
DOMAINS = {"legal", "finanzas", "rrhh", "procedimientos"}
CHAPTER_IDS = {"gold_001", "gold_003", "silver_legal_045", "silver_finanzas_123", "silver_art_012"}
# The chapter's two worked queries, with the expected chunks it names.
CHAPTER_QUERIES = {
    "¿Cómo se calcula el IRPF 2025 para autónomos?":
        ["gold_001", "silver_legal_045", "silver_finanzas_123"],
    "¿Cuántos días de asuntos propios corresponden?": ["silver_art_012", "gold_003"],
}
TRAVEL_QUERY = "¿Qué percibos exige un desplazamiento internacional?"


def _jsonl(name: str) -> list[dict[str, Any]]:
    lines = (KB / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def v1() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in _jsonl("corpus_v1.jsonl")}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((KB / "golden.yaml").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_records_are_well_formed(name: str) -> None:
    records = _jsonl(name)
    ids = [r["id"] for r in records]
    assert records and len(ids) == len(set(ids)), Counter(ids).most_common(3)
    for r in records:
        for fld in ("id", "text", "content", "doc_id", "domain", "label", "kind", "valid_from"):
            assert isinstance(r.get(fld), str) and r[fld].strip(), (r["id"], fld)
        assert r["kind"] in CHUNK_KINDS, r["id"]
        assert isinstance(r["facets"], dict) and r["facets"], r["id"]
        assert all(isinstance(v, str) for v in r["facets"].values()), r["id"]
        start = dt.date.fromisoformat(r["valid_from"])
        if "valid_to" in r:
            assert start <= dt.date.fromisoformat(r["valid_to"]), r["id"]
        if r["kind"] == "table":
            # A described table embeds its prose followed by the raw table; a broken one, the
            # raw table only.
            desc = r.get("description", "")
            assert r["text"] == (f"{desc}\n\n{r['content']}" if desc else r["content"]), r["id"]
        else:
            assert r["text"] == r["content"] and "description" not in r, r["id"]


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_product_reader_accepts_every_record(name: str) -> None:
    corpus = read_corpus(KB / name, on_error="collect")
    assert corpus.rejected == []
    assert len(corpus) == len(_jsonl(name))


def test_corpus_v1_covers_the_chapter_domain(v1: dict[str, dict[str, Any]]) -> None:
    records = list(v1.values())
    assert len(records) >= 150
    assert {r["domain"] for r in records} >= DOMAINS
    docs = Counter(r["doc_id"] for r in records)
    assert len(docs) >= 40
    assert sum(1 for n in docs.values() if n >= 3) >= 20  # several chunks per document
    labels = Counter(r["label"] for r in records)
    assert labels[GOLD_LABEL] >= 12
    assert labels["ARTICULO_CONVENIO"] >= 10
    assert v1.keys() >= CHAPTER_IDS
    kinds = Counter(r["kind"] for r in records)
    assert kinds["table"] >= 5 and kinds["faq"] >= 5
    windows = [r for r in records if "valid_to" in r]
    expired = [r for r in windows if dt.date.fromisoformat(r["valid_to"]) < dt.date(2025, 1, 1)]
    assert len(windows) >= 10 and len(expired) >= 2


def test_v1_has_tables_with_and_without_description(v1: dict[str, dict[str, Any]]) -> None:
    tables = [r for r in v1.values() if r["kind"] == "table"]
    assert sum(1 for r in tables if r.get("description")) >= 3
    broken = {r["id"] for r in tables if not r.get("description")}
    assert "silver_finanzas_123" in broken and len(broken) >= 2


def test_fix_describes_the_broken_tables(v1: dict[str, dict[str, Any]]) -> None:
    fix = _jsonl("fix_v2.jsonl")
    assert any(r["id"] == "silver_finanzas_123" for r in fix)
    for r in fix:
        old = v1[r["id"]]  # same id: ingesting the fix updates the chunk
        assert old["kind"] == r["kind"] == "table" and not old.get("description")
        assert r["content"] == old["content"]  # only the representation changes
        assert len(r["description"]) >= 200 and r["text"].startswith(r["description"])
    broken = {i for i, r in v1.items() if r["kind"] == "table" and not r.get("description")}
    assert broken == {r["id"] for r in fix}


def test_travel_ingestion_is_new_and_shares_the_concept(
    v1: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    travel = _jsonl("travel_v3.jsonl")
    assert 10 <= len(travel) <= 20
    assert not {r["id"] for r in travel} & v1.keys()
    (query,) = [q for q in golden["queries"] if q["text"] == TRAVEL_QUERY]
    buried = [v1[i] for i in query["expected"]]
    assert any(r["kind"] == "table" and r.get("description") for r in buried)
    assert not set(query.get("gold", []))  # the regression is a non-Gold failure
    assert {r["domain"] for r in travel} == {buried[0]["domain"]}


def test_golden_set_is_consistent_with_the_corpus(
    v1: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    assert golden["name"] == "despacho-laboral" and golden["version"] == "1"
    assert golden["top_k"] == 10
    queries = golden["queries"]
    assert len(queries) >= 50
    assert len({q["id"] for q in queries}) == len(queries)
    assert len({q["text"] for q in queries}) == len(queries)
    for q in queries:
        expected, gold = q["expected"], q.get("gold", [])
        assert 1 <= len(expected) <= 3 and len(set(expected)) == len(expected), q["id"]
        assert set(expected) <= v1.keys(), (q["id"], set(expected) - v1.keys())
        assert set(gold) <= set(expected), q["id"]
        # Gold by flag and Gold by label agree, so the gate reads the same Gold either way.
        assert set(gold) == {i for i in expected if v1[i]["label"] == GOLD_LABEL}, q["id"]
        assert q["domain"] in {r["domain"] for r in v1.values()}, q["id"]
        assert q["tags"] and all(isinstance(t, str) for t in q["tags"]), q["id"]
    by_text = {q["text"]: q["expected"] for q in queries}
    for text, expected in CHAPTER_QUERIES.items():
        assert by_text[text] == expected
    assert TRAVEL_QUERY in by_text
    assert len(load_golden(KB / "golden.yaml").queries) == len(queries)


def test_golden_queries_that_need_a_broken_table(
    v1: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    broken = {i for i, r in v1.items() if r["kind"] == "table" and not r.get("description")}
    needing = [q for q in golden["queries"] if broken & set(q["expected"])]
    # Enough for the mean to drop below 95 in v1 (each failing query scores 0), one of them Gold.
    assert len(needing) / len(golden["queries"]) > 0.05
    assert any(q.get("gold") for q in needing)
    assert all("table" in q["tags"] for q in needing)


def test_policy(golden: dict[str, Any]) -> None:
    raw = yaml.safe_load((KB / "policy.yaml").read_text(encoding="utf-8"))
    assert set(raw) >= {"top_k", "recall_floor", "min_mean_quality", "noise_ceiling",
                        "gold_failures_allowed", "other_failures_allowed", "waivers"}
    policy = load_policy(KB / "policy.yaml")
    assert (policy.top_k, policy.recall_floor, policy.min_mean_quality) == (10, 0.90, 95.0)
    assert policy.gold_failures_allowed == 0 and policy.other_failures_allowed == 0.05
    assert policy.noise_ceiling == 0.30 and policy.waivers == {}
    assert set(policy.noise_ceiling_per_domain) == {q["domain"] for q in golden["queries"]}
