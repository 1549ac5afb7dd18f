"""Anchors that quote the fact (``golden migrate --quote sentence``) keep the gate's verdict
through a re-chunking that keeps each fact in one chunk: the shipped examples/kb/golden_anchors.yaml
on the example knowledge base, whole and re-chunked by examples/kb/rechunk.py, on real LanceDB
stores with the default embedder (USE). Also: the sentence splitter, `golden check --store`, and
calibration with anchors."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.acceptance.anchors import locate, resolve_queries
from recallwatch.acceptance.golden_labels import check_labels, migrate_labels
from recallwatch.cli import app
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.formats.sentences import split_sentences
from recallwatch.records import Chunk, chunk_to_record
from tests.acceptance.test_anchors import KB, _cranfield, _rechunker, kb_v2, rechunked

runner = CliRunner(env={"COLUMNS": "200"})
SHIPPED = KB / "golden_anchors.yaml"


def test_sentence_splitter() -> None:
    text = "Artículo 12. Días de asuntos propios. Son 2.000 euros, arts. 28 y 30. ¿Y el resto? Sí."
    assert split_sentences(text) == ["Artículo 12.", "Días de asuntos propios.",
                                     "Son 2.000 euros, arts. 28 y 30.", "¿Y el resto?", "Sí."]
    assert all(s in text for s in split_sentences(text))
    # all in lower case (Cranfield): every end mark followed by white space cuts
    assert split_sentences("the flow was laminar. the wake  was not.\n") == [
        "the flow was laminar.", "the wake  was not."]
    assert split_sentences("   ") == []
    # the example re-chunker uses the same splitter
    chunk = next(c for c in kb_v2() if c.id == "silver_art_012")
    pieces = _rechunker().rechunk([chunk_to_record(chunk)], "sentences")
    assert [p["text"] for p in pieces] == split_sentences(chunk.text)


def _small_golden() -> GoldenSet:
    golden = load_golden(KB / "golden.yaml")
    wanted = ("irpf_autonomos_2025", "asuntos_propios")
    return GoldenSet.from_dict({"name": golden.name, "version": "1", "top_k": 10, "queries": [
        {"id": q.id, "text": q.text, "expected": list(q.expected), "gold": list(q.gold)}
        for q in golden.queries if q.id in wanted]})


def test_sentence_quotes_ties_go_to_the_first_sentence_and_tables_stay_whole() -> None:
    """With an embedder that finds every sentence equally similar (a user's function), the
    first sentence of five words or more is quoted (in these chunks no other chunk of the
    document holds it); tables are whole."""
    from recallwatch.embedders import get_embedder

    flat = get_embedder("callable", fn=lambda texts: np.ones((len(texts), 4), np.float32))
    chunks = kb_v2()
    by_id = {c.id: c for c in chunks}
    migration = migrate_labels(_small_golden(), chunks, None, quote="sentence", embedder=flat)
    for choice in migration.quotes:
        chunk = by_id[choice.chunk_id]
        if chunk.kind == "table" or chunk.description:
            assert choice.why == "a table is one fact" and choice.quote == chunk.content
        else:
            sentences = split_sentences(chunk.content or chunk.text)
            first = next(i for i, s in enumerate(sentences) if len(re.findall(r"\w+", s)) >= 5)
            assert choice.position == first + 1 and choice.similarity == pytest.approx(1.0)
            assert choice.quote == sentences[first]
    assert {c.chunk_id for c in migration.quotes} >= {"silver_finanzas_123", "silver_art_012"}


@pytest.mark.slow
def test_sentence_quotes_pick_the_most_similar_own_sentence() -> None:
    from recallwatch.embedders import get_embedder

    chunks = kb_v2()
    by_id = {c.id: c for c in chunks}
    golden = _small_golden()
    embedder = get_embedder()
    migration = migrate_labels(golden, chunks, None, quote="sentence", embedder=embedder)
    assert len(migration.quotes) == sum(len(q.expected) for q in golden.queries)
    texts = {q.id: q.text for q in golden.queries}
    for choice in migration.quotes:
        chunk = by_id[choice.chunk_id]
        whole = chunk.content or chunk.text
        doc = [c for c in chunks if c.doc_id == chunk.doc_id]
        if chunk.kind == "table" or chunk.description:
            assert choice.quote == whole and choice.position is None
            continue
        sentences = split_sentences(whole)
        assert choice.position is not None and choice.quote == sentences[choice.position - 1]
        # the eligible sentences: five words or more, and no other chunk of the document holds them
        from recallwatch.formats.golden import Anchor

        own = [s for s in sentences if len(re.findall(r"\w+", s)) >= 5
               and locate(Anchor(chunk.doc_id or "", s), doc).chunk_ids == (chunk.id,)]
        assert choice.quote in own
        vectors = np.asarray(embedder.embed_documents(own), np.float64)
        query = np.asarray(embedder.embed_queries([texts[choice.query]]), np.float64)[0]
        cos = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
        assert own[int(np.argmax(cos))] == choice.quote
        assert choice.similarity == pytest.approx(float(cos.max()), abs=1e-5)
    # deterministic, and resolving to the very chunks the ids named
    again = migrate_labels(golden, chunks, None, quote="sentence", embedder=embedder)
    assert again.golden.hash == migration.golden.hash
    resolved = resolve_queries(migration.golden.queries,
                               lambda docs: [c for c in chunks if c.doc_id in set(docs)])
    settled = resolved.settle(migration.golden.queries, [[] for _ in golden.queries])
    for old, new in zip(golden.queries, settled, strict=True):
        assert set(new.expected) == set(old.expected) and set(new.gold) == set(old.gold)


def test_shipped_anchor_set_matches_the_ids_and_survives_a_cap(tmp_path: Path) -> None:
    """The shipped set names the same chunks as golden.yaml on version 2. On the `cap`
    re-chunking (every chunk renamed, the prose chunks over 700 characters cut in two) each of
    its anchors is held whole by one chunk, while an anchor quoting a whole old chunk that was
    cut is split (the gate would need both halves)."""
    ids = load_golden(KB / "golden.yaml")
    shipped = load_golden(SHIPPED)
    assert [q.id for q in shipped.queries] == [q.id for q in ids.queries]
    chunks = kb_v2()
    resolved = resolve_queries(shipped.queries,
                               lambda docs: [c for c in chunks if c.doc_id in set(docs)])
    settled = resolved.settle(shipped.queries, [[] for _ in shipped.queries])
    for old, new in zip(ids.queries, settled, strict=True):
        assert set(new.expected) == set(old.expected), old.id
        assert set(new.gold) == set(old.gold), old.id
    cap = rechunked("cap", tmp_path)
    assert not {c.id for c in cap} & {c.id for c in chunks}  # every chunk renamed
    sizes = np.mean([len(c.text) for c in cap]) / np.mean([len(c.text) for c in chunks])
    assert 0.8 < sizes < 1.2  # about the original size
    assert {x.status for x in check_labels(shipped, cap)} == {"ok"}
    by_id = {c.id: c for c in chunks}
    cut = {c.id for c in chunks if len(c.text) > 700 and not (c.kind == "table" or c.description)
           and len(split_sentences(c.content or c.text)) > 1}
    whole_quotes = check_labels(migrate_labels(ids, chunks, None).golden, cap)
    n_cut_labels = sum(cid in cut for q in ids.queries for cid in q.expected)
    assert n_cut_labels > 0 and by_id
    assert Counter(x.status for x in whole_quotes) == {"ok": 121 - n_cut_labels,
                                                       "split": n_cut_labels}


# -- real LanceDB stores with the default embedder ---------------------------------------------


@dataclass
class Stores:
    root: Path
    v2: str
    cap: str


def _ingest(path: Path, chunks: list[Chunk], uri: str) -> str:
    path.write_text("".join(json.dumps(chunk_to_record(c), ensure_ascii=False) + "\n"
                            for c in chunks), encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(path), "--store", uri])
    assert result.exit_code == 0, result.output
    return uri


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    root = tmp_path_factory.mktemp("kb-stores")
    v2 = _ingest(root / "kb_v2.jsonl", kb_v2(), f"lancedb://{root}/v2?table=chunks")
    cap = _ingest(root / "kb_cap.jsonl", rechunked("cap", root),
                  f"lancedb://{root}/cap?table=chunks")
    yield Stores(root, v2, cap)


def _gate(golden: Path, store: str) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, ["gate", str(golden), "--store", store, "--policy",
                                 str(KB / "policy.yaml"), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.slow
def test_same_golden_set_same_verdict_on_original_and_capped_chunks(stores: Stores) -> None:
    code_ids, ids = _gate(KB / "golden.yaml", stores.v2)
    code_v2, on_v2 = _gate(SHIPPED, stores.v2)
    code_cap, on_cap = _gate(SHIPPED, stores.cap)
    assert (code_ids, ids["verdict"]) == (0, "ACCEPT")  # the example's version 2 accepts
    assert (code_v2, on_v2["verdict"]) == (code_cap, on_cap["verdict"]) == (0, "ACCEPT")
    # on version 2 the anchors expect the very chunks the ids did: the same per-query figures
    for a, b in zip(ids["queries"], on_v2["queries"], strict=True):  # type: ignore[call-overload]
        assert (a["id"], sorted(e["id"] for e in a["expected"]), a["recall"]) == \
            (b["id"], sorted(e["id"] for e in b["expected"]), b["recall"])
    # on the new chunking every anchor is whole in one new chunk, and its fact is in the top K
    for q in on_cap["queries"]:  # type: ignore[attr-defined]
        assert all(a["kind"] == "whole" and a["in_context"] for a in q["anchors"]), q["id"]
        assert all("/c" in e["id"] for e in q["expected"])
    # the whole-chunk quotes of the same labels: a cut chunk needs both halves, and the gate
    # stops (both halves are not always in the top 10)
    whole = stores.root / "golden_chunk.yaml"
    mig = runner.invoke(app, ["golden", "migrate", str(KB / "golden.yaml"), "--from",
                              str(stores.root / "kb_v2.jsonl"), "--out", str(whole)])
    assert mig.exit_code == 0, mig.output
    code_whole, on_whole = _gate(whole, stores.cap)
    assert (code_whole, on_whole["verdict"]) == (1, "STOP")


@pytest.mark.slow
def test_golden_check_against_stores(stores: Stores) -> None:
    ok = runner.invoke(app, ["golden", "check", str(SHIPPED), "--store", stores.cap])
    assert ok.exit_code == 0, ok.output
    assert "121 label(s) against" in ok.output and "121 ok" in ok.output
    lost = runner.invoke(app, ["golden", "check", str(KB / "golden.yaml"), "--store",
                               stores.cap, "--format", "json"])
    assert lost.exit_code == 2
    data = json.loads(lost.stdout)
    assert data["lost"] == 121 and {x["status"] for x in data["labels"]} == {"lost"}
    assert "Error: " in lost.output and "record 'irpf_autonomos_2025'" in lost.output


@pytest.mark.slow
def test_migrating_from_the_store_reproduces_the_shipped_file(stores: Stores) -> None:
    out = stores.root / "from_store.yaml"
    result = runner.invoke(app, ["golden", "migrate", str(KB / "golden.yaml"), "--from",
                                 stores.v2, "--to", stores.cap, "--quote", "sentence",
                                 "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["quotes"]) == 121 and data["lost"] == 0
    assert load_golden(out).hash == load_golden(SHIPPED).hash


@pytest.mark.slow
def test_calibration_resolves_anchors_like_ids(stores: Stores) -> None:
    """On version 2 the shipped anchors resolve to the chunks the ids name, so calibrating the
    no-result threshold and the noise ceilings gives the same figures with either set."""
    def threshold(golden: Path) -> dict[str, object]:
        result = runner.invoke(app, ["ops", "calibrate-threshold", str(golden), "--store",
                                     stores.v2,
                                     "--dry-run", "--format", "json"])
        assert result.exit_code == 0, result.output
        data: dict[str, object] = json.loads(result.stdout)
        return data

    by_ids, by_anchors = threshold(KB / "golden.yaml"), threshold(SHIPPED)
    for key in ("threshold", "precision", "coverage", "answerable", "unanswerable", "samples"):
        assert by_ids[key] == by_anchors[key], key

    def noise(golden: Path) -> dict[str, object]:
        result = runner.invoke(app, ["ops", "calibrate-noise", str(golden), "--store", stores.v2,
                                     "--format", "json"])
        assert result.exit_code == 0, result.output
        data: dict[str, object] = json.loads(result.stdout)
        return data

    by_ids, by_anchors = noise(KB / "golden.yaml"), noise(SHIPPED)
    by_ids.pop("run_id"), by_anchors.pop("run_id")  # two runs of the gate
    assert by_ids == by_anchors


@pytest.mark.slow
def test_cranfield_sentence_quotes_land_in_one_sentence(cranfield_dir: Path) -> None:
    """Cranfield abstracts whole vs split into sentences: quoting the fact, every label of 10
    queries resolves whole to a sentence chunk (to several only when the abstract repeats that
    very sentence, e.g. its title: any of them counts); quoting the abstract, a long one is
    split."""
    whole, sentences, golden = _cranfield(cranfield_dir)
    few = GoldenSet.from_dict({**golden.to_dict(), "queries": [
        q.to_dict() for q in golden.queries[:10]]})
    migration = migrate_labels(few, whole, sentences, quote="sentence")
    assert not migration.lost
    assert all(q.position is not None or q.why == "one sentence" for q in migration.quotes)
    for x in check_labels(migration.golden, sentences):
        r = x.resolution
        assert r is not None and r.kind == "whole", x
        assert all(c.startswith(r.anchor.doc_id + ".") for c in r.chunk_ids)
        if len(r.chunk_ids) > 1:
            texts = {c.text for c in sentences if c.id in r.chunk_ids}
            assert texts == {r.anchor.quote}, x
    assert {x.status for x in check_labels(migration.golden, whole)} == {"ok"}
    split = check_labels(migrate_labels(few, whole, None).golden, sentences)
    assert Counter(x.status for x in split)["split"] > 0
