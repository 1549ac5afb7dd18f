"""Content anchors on real data: the example knowledge base chunked three other ways by
examples/kb/rechunk.py, and Cranfield abstracts whole vs split into sentences. The golden set is
migrated from chunk ids to anchors once and must resolve through every chunking."""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from recallwatch.acceptance.anchors import fact_found, locate, resolve_queries
from recallwatch.acceptance.golden_labels import check_labels, migrate_labels, write_golden
from recallwatch.errors import DatasetError, InputError
from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.golden import Anchor, GoldenSet, load_golden
from recallwatch.formats.sentences import split_sentences
from recallwatch.records import Chunk

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


def _rechunker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rechunk", KB / "rechunk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kb_v2() -> list[Chunk]:
    fix = {c.id: c for c in read_corpus(KB / "fix_v2.jsonl")}
    return [fix.get(c.id, c) for c in read_corpus(KB / "corpus_v1.jsonl")]


def rechunked(mode: str, tmp_path: Path) -> list[Chunk]:
    from recallwatch.records import chunk_to_record

    records: list[dict[str, Any]] = [chunk_to_record(c) for c in kb_v2()]
    import json

    out = tmp_path / f"{mode}.jsonl"
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                           for r in _rechunker().rechunk(records, mode)), encoding="utf-8")
    return list(read_corpus(out))


@pytest.fixture(scope="module")
def anchored(tmp_path_factory: pytest.TempPathFactory) -> GoldenSet:
    """The example golden set with every chunk id rewritten as an anchor (on version 2)."""
    golden = load_golden(KB / "golden.yaml")
    migration = migrate_labels(golden, kb_v2(), None)
    path = tmp_path_factory.mktemp("golden") / "anchored.yaml"
    write_golden(migration.golden, path)
    return load_golden(path)


def test_migration_rewrites_every_id_and_changes_version_and_hash(anchored: GoldenSet) -> None:
    golden = load_golden(KB / "golden.yaml")
    assert anchored.version == "2" and anchored.hash != golden.hash
    by_id = {c.id: c for c in kb_v2()}
    for old, new in zip(golden.queries, anchored.queries, strict=True):
        assert new.expected == () and len(new.anchors) == len(old.expected)
        for cid, anchor in zip(old.expected, new.anchors, strict=True):
            chunk = by_id[cid]
            assert anchor.doc_id == chunk.doc_id
            assert anchor.quote == (chunk.content or chunk.text)
            assert anchor.gold == (cid in old.gold)


def test_anchors_resolve_to_the_very_chunks_they_came_from(anchored: GoldenSet) -> None:
    golden = load_golden(KB / "golden.yaml")
    chunks = kb_v2()
    resolved = resolve_queries(anchored.queries, lambda docs: [c for c in chunks
                                                                if c.doc_id in set(docs)])
    settled = resolved.settle(anchored.queries, [[] for _ in anchored.queries])
    for old, new in zip(golden.queries, settled, strict=True):
        assert set(new.expected) == set(old.expected), old.id
        assert set(new.gold) >= set(old.gold)


def test_merged_chunking_holds_every_anchor_whole(anchored: GoldenSet, tmp_path: Path) -> None:
    merged = rechunked("merge", tmp_path)
    labels = check_labels(anchored, merged)
    assert {x.status for x in labels} == {"ok"}
    # every old chunk of a document is inside the merged chunk that took its pair
    assert all(x.resolution is not None and x.resolution.kind == "whole" for x in labels)


def test_overlapping_windows_make_alternatives(anchored: GoldenSet, tmp_path: Path) -> None:
    windows = rechunked("window", tmp_path)
    labels = check_labels(anchored, windows)
    counts = Counter(x.status for x in labels)
    assert counts["ambiguous"] > 0 and counts["lost"] == 0
    for x in labels:
        assert x.resolution is not None
        if x.status == "ambiguous":  # an inner chunk sits in the window before and after it
            ids = x.resolution.chunk_ids
            numbers = sorted(int(re.sub(r".*/w", "", c)) for c in ids)
            assert numbers == list(range(numbers[0], numbers[0] + len(ids)))


def test_sentence_chunking_splits_prose_and_keeps_tables(anchored: GoldenSet,
                                                          tmp_path: Path) -> None:
    sentences = rechunked("sentences", tmp_path)
    by_id = {c.id: c for c in sentences}
    labels = check_labels(anchored, sentences)
    assert {x.status for x in labels} <= {"ok", "split"}
    for x in labels:
        r = x.resolution
        assert r is not None
        if r.kind == "split":
            # the pieces, joined, are exactly the quote (normalised): nothing missing, no stranger
            joined = " ".join(by_id[c].text for c in r.chunk_ids)
            quote = r.anchor.quote
            assert " ".join(joined.split()).casefold() == " ".join(quote.split()).casefold()
        else:
            assert by_id[r.chunk_ids[0]].kind == "table" or by_id[r.chunk_ids[0]].description \
                or len(re.findall(r"[.!?]\s+[A-ZÁÉÍÓÚÑ¿¡]", r.anchor.quote)) == 0


def test_normalised_and_exact_matches(tmp_path: Path) -> None:
    chunk = next(c for c in kb_v2() if c.id == "silver_art_012")
    words = chunk.text.split()
    exact = Anchor(chunk.doc_id or "", " ".join(words[3:12]))
    shouted = Anchor(chunk.doc_id or "", "  \n".join(words[3:12]).upper())
    assert locate(exact, [chunk]).match == "exact"
    r = locate(shouted, [chunk])
    assert (r.kind, r.match, r.chunk_ids) == ("whole", "normalised", ("silver_art_012",))


def test_an_edited_quote_is_lost_with_the_closest_chunks() -> None:
    chunks = [c for c in kb_v2() if c.doc_id == "CONVENIO-OFICINAS-DESPACHOS-2024-2026"]
    target = next(c for c in chunks if c.id == "silver_art_012")
    edited = target.text.replace("asuntos propios", "asuntos personales", 1)
    assert edited != target.text
    r = locate(Anchor(target.doc_id or "", edited), chunks)
    assert r.kind == "unresolved"
    assert r.closest[0][0] == "silver_art_012" and r.closest[0][1] > 0.9


def test_the_gate_refuses_an_anchor_that_resolves_nowhere(anchored: GoldenSet) -> None:
    bad = Anchor("ESTATUTO-TRABAJADORES", "una frase que ningún documento contiene")
    query = anchored.queries[0]
    from dataclasses import replace

    golden = replace(anchored, queries=(replace(query, anchors=(bad,)),))
    with pytest.raises(DatasetError, match=r"do not resolve.*closest chunks"):
        resolve_queries(golden.queries, lambda docs: [c for c in kb_v2() if c.doc_id in docs])


def test_fact_found_in_context() -> None:
    chunks = kb_v2()
    gold = next(c for c in chunks if c.id == "gold_001")
    anchor = Anchor(gold.doc_id or "", gold.text[:80])
    assert fact_found(anchor, [gold])
    assert not fact_found(anchor, [c for c in chunks if c.id != "gold_001"][:10])


def test_migrate_into_new_ids_and_report_lost(anchored: GoldenSet, tmp_path: Path) -> None:
    golden = load_golden(KB / "golden.yaml")
    merged = rechunked("merge", tmp_path)
    migration = migrate_labels(golden, kb_v2(), merged, into="ids")
    assert not migration.lost and not migration.ambiguous
    merged_ids = {c.id for c in merged}
    for q in migration.golden.queries:
        assert q.anchors == () and set(q.expected) <= merged_ids
    # a new corpus without one document: its labels are lost, and kept as anchors
    without = [c for c in merged if c.doc_id != "ESTATUTO-TRABAJADORES"]
    partial = migrate_labels(golden, kb_v2(), without, into="ids")
    lost_docs = {x.label.split(":")[0] for x in partial.lost}
    assert lost_docs == {"ESTATUTO-TRABAJADORES"}
    kept = [a for q in partial.golden.queries for a in q.anchors]
    assert {a.doc_id for a in kept} == {"ESTATUTO-TRABAJADORES"}


def test_migrate_needs_the_old_chunks() -> None:
    golden = load_golden(KB / "golden.yaml")
    some = [c for c in kb_v2() if c.id != "gold_001"]
    with pytest.raises(DatasetError, match=r"gold_001.*not in the old corpus"):
        migrate_labels(golden, some, None)


# -- Cranfield: whole abstracts vs sentences ---------------------------------------------------


def _cranfield(cranfield_dir: Path) -> tuple[list[Chunk], list[Chunk], GoldenSet]:
    from recallwatch.formats.cranfield import read_documents, read_qrels, read_queries

    docs = read_documents(cranfield_dir / "cran.all.1400")
    whole = [Chunk(id=d, text=t, doc_id=d) for d, t in docs.items()]
    sentences = []
    for d, t in docs.items():
        for n, s in enumerate(split_sentences(t), 1):
            sentences.append(Chunk(id=f"{d}.{n}", text=s, doc_id=d))
    qrels = read_qrels(cranfield_dir / "cranqrel")
    queries = [q for q in read_queries(cranfield_dir / "cran.qry")][:25]
    golden = GoldenSet.from_dict({"name": "cranfield-25", "version": "1", "queries": [
        {"id": q.query_id, "text": q.text,
         "expected": sorted(d for d, g in qrels[q.query_id].items() if g > 0)}
        for q in queries if any(g > 0 for g in qrels.get(q.query_id, {}).values())]})
    return whole, sentences, golden


def test_cranfield_whole_and_sentences(cranfield_dir: Path) -> None:
    whole, sentences, golden = _cranfield(cranfield_dir)
    anchored = migrate_labels(golden, whole, sentences).golden
    by_doc = Counter(c.doc_id for c in sentences)
    labels = check_labels(anchored, sentences)
    assert not [x for x in labels if x.status == "lost"]
    for x in labels:
        r = x.resolution
        assert r is not None
        # an abstract resolves to all its sentences: one chunk when it has one sentence
        n = by_doc[r.anchor.doc_id]
        if n == 1:
            assert r.kind == "whole" and r.chunk_ids == (r.anchor.doc_id + ".1",)
        else:
            assert r.kind == "split"
            assert sorted(r.chunk_ids) == sorted(f"{r.anchor.doc_id}.{i}" for i in range(1, n + 1))
    # the same anchors resolve against the whole abstracts, each to its own document
    back = check_labels(anchored, whole)
    assert {x.status for x in back} == {"ok"}
    assert all(x.resolution and x.resolution.chunk_ids == (x.resolution.anchor.doc_id,)
               for x in back)
    # and sentence ids migrated up to whole abstracts merge into the document's one id
    sentence_golden = migrate_labels(anchored, sentences, sentences, into="ids").golden
    up = migrate_labels(sentence_golden, sentences, whole, into="ids")
    for q_up, q_orig in zip(up.golden.queries, golden.queries, strict=True):
        assert sorted(q_up.expected) == sorted(q_orig.expected)


def test_golden_parse_errors_are_located(tmp_path: Path) -> None:
    bad = tmp_path / "g.yaml"
    bad.write_text('name: g\nqueries:\n  - id: q1\n    text: t\n    expected:\n'
                   '      - {doc_id: D, quot: "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"g.yaml:6: record 'q1': field 'quot': unknown key"):
        load_golden(bad)
    bad.write_text('name: g\nqueries:\n  - id: q1\n    text: t\n    expected:\n'
                   '      - {doc_id: D, quote: "   "}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"field 'expected.quote'"):
        load_golden(bad)
    bad.write_text('name: g\nqueries:\n  - id: q1\n    text: t\n    expected:\n'
                   '      - {doc_id: D, quote: "A b"}\n      - {doc_id: D, quote: "a  B"}\n',
                   encoding="utf-8")
    with pytest.raises(InputError, match="listed twice"):
        load_golden(bad)


def test_id_only_golden_sets_hash_as_before() -> None:
    from recallwatch._hashing import canonical_hash

    golden = load_golden(KB / "golden.yaml")
    by_hand = {"name": golden.name, "version": golden.version, "top_k": golden.top_k,
               "queries": [{"id": q.id, "text": q.text, "expected": list(q.expected),
                            **({"gold": list(q.gold)} if q.gold else {}),
                            **({"domain": q.domain} if q.domain else {}),
                            **({"tags": list(q.tags)} if q.tags else {})}
                           for q in golden.queries]}
    assert golden.hash == canonical_hash(by_hand)


@pytest.mark.parametrize(("typed", "ids", "meant"), [
    # a look-alike typo (O for 0) beats ids that are as close by edit distance
    ("chunk_O1", ["chunk_21", "chunk_11", "chunk_01"], "chunk_01"),
    ("gold_O03", ["gold_030", "gold_013", "gold_003"], "gold_003"),
    ("silver_Iegal_045", ["silver_legal_045", "silver_legal_046"], "silver_legal_045"),
    # no look-alike: the closest; a tie goes to the first in alphabetical order
    ("doc_x", ["doc_b", "doc_a"], "doc_a"),
])
def test_a_lost_id_suggests_the_id_it_was_meant_to_be(tmp_path: Path, typed: str,
                                                      ids: list[str], meant: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(f'name: g\nversion: "1"\nqueries:\n  - {{id: q1, text: t, expected: '
                    f"[{typed}]}}\n", encoding="utf-8")
    [label] = check_labels(load_golden(path), [Chunk(id=i, text="x") for i in ids])
    assert label.status == "lost" and f"(did you mean {meant!r}?)" in label.detail
