"""Re-chunking: every character of a document lands in a chunk, overlap as configured, tables
whole, and content anchors of the example golden set resolve on every chunking."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.acceptance.anchors import locate
from recallwatch.errors import InputError
from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.golden import load_golden
from recallwatch.ops.chunking import METHODS, Chunking, chunk_spans, rechunk
from recallwatch.records import Chunk

ROOT = Path(__file__).resolve().parents[2]
KB = ROOT / "examples" / "kb"

_WORDS = st.text(alphabet="abcdeÁ.?¿ ", min_size=1, max_size=12)
_TEXT = st.lists(
    st.one_of(_WORDS, st.sampled_from(["\n\n", " ", ". ", "\n", "Él. ", "Uno dos. Tres"])),
    min_size=0, max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.sampled_from(METHODS), st.integers(1, 60), st.integers(0, 59))
def test_every_character_lands_in_a_chunk(text: str, method: str, size: int,
                                          overlap: int) -> None:
    overlap = min(overlap, size - 1)
    spans = chunk_spans(text, Chunking(method, size, overlap))  # type: ignore[arg-type]
    covered = [False] * len(text)
    for start, end in spans:
        assert 0 <= start < end <= len(text)
        assert not text[start].isspace() and not text[end - 1].isspace()
        for i in range(start, end):
            covered[i] = True
    assert all(c or ch.isspace() for c, ch in zip(covered, text, strict=True))
    # in order, each chunk ending past the one before
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(spans))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="xyz", min_size=1, max_size=8), min_size=1, max_size=60),
       st.integers(1, 40), st.integers(0, 39))
def test_size_and_overlap_as_configured(words: list[str], size: int, overlap: int) -> None:
    overlap = min(overlap, size - 1)
    text = " ".join(words)
    spans = chunk_spans(text, Chunking("size", size, overlap))
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    for n, (start, end) in enumerate(spans):
        first, last = starts.index(start), ends.index(end)
        if n == 0:
            # packed up to size: the next word would not have fitted (or there is none)
            assert end - start <= size or first == last
        if n + 1 < len(spans):
            nxt = spans[n + 1][0]
            shared = end - nxt if nxt < end else 0
            assert shared <= overlap or starts.index(nxt) == first + 1
            # the overlap takes as many whole trailing words as fit, but always moves on
            k = starts.index(nxt)
            if k > first + 1:
                assert end - starts[k - 1] > overlap
            if overlap == 0:
                assert nxt > end


def test_sentences_and_paragraphs() -> None:
    text = "Primera frase. Segunda frase.\n\nOtro párrafo aquí. Y más."
    sentences = [text[a:b] for a, b in chunk_spans(text, Chunking("sentences", 1))]
    assert sentences == ["Primera frase.", "Segunda frase.", "Otro párrafo aquí.", "Y más."]
    paragraphs = [text[a:b] for a, b in chunk_spans(text, Chunking("paragraph", 1))]
    assert paragraphs == ["Primera frase. Segunda frase.", "Otro párrafo aquí. Y más."]
    packed = [text[a:b] for a, b in chunk_spans(text, Chunking("sentences", 30, 20))]
    assert packed == ["Primera frase. Segunda frase.", "Segunda frase.\n\nOtro párrafo aquí.",
                      "Otro párrafo aquí. Y más."]


def test_tables_stay_whole_and_chunks_keep_their_document() -> None:
    chunks = [
        Chunk("a1", "Uno. Dos.", doc_id="D", domain="legal", label="NORMA"),
        Chunk("a2", "Tramo\tCuota\nR1\t200", doc_id="D", kind="table", description="Cuotas."),
        Chunk("a3", "Tres. Cuatro.", doc_id="D", domain="legal"),
        Chunk("b1", "Otro documento.", doc_id="E"),
    ]
    out = rechunk(chunks, Chunking("sentences", 1))
    assert [(c.id, c.text, c.doc_id) for c in out] == [
        ("D/s1", "Uno.", "D"), ("D/s2", "Dos.", "D"),
        ("D/s3", "Tramo\tCuota\nR1\t200", "D"),
        ("D/s4", "Tres.", "D"), ("D/s5", "Cuatro.", "D"), ("E/s1", "Otro documento.", "E")]
    assert out[2].kind == "table" and out[2].description == "Cuotas."
    assert out[0].label == "NORMA" and out[0].description is None
    assert all(c.content_hash for c in out)
    assert len({c.content_hash for c in out}) == len(out)


@pytest.mark.parametrize("chunking", [Chunking("sentences", 1), Chunking("sentences", 400, 120),
                                      Chunking("size", 300, 60), Chunking("paragraph", 800)])
def test_example_anchors_resolve_on_every_chunking(chunking: Chunking) -> None:
    corpus = {c.id: c for c in read_corpus(KB / "corpus_v1.jsonl")}
    corpus.update({c.id: c for c in read_corpus(KB / "fix_v2.jsonl")})
    chunks = rechunk(list(corpus.values()), chunking)
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id or "", []).append(c)
    golden = load_golden(KB / "golden_anchors.yaml")
    anchors = [a for q in golden.queries for a in q.anchors]
    assert len(anchors) > 100
    unresolved = [a for a in anchors if locate(a, by_doc[a.doc_id]).kind == "unresolved"]
    assert unresolved == []


def test_bad_chunking_settings_are_located() -> None:
    with pytest.raises(InputError, match=re.escape("field 'chunking.method': expected sentences "
                                                   "or size or paragraph, found 'words'")):
        Chunking.from_mapping({"method": "words"}, source="plan.yaml", record="v1")
    with pytest.raises(InputError, match=r"plan.yaml: record 'v1': field 'chunking.overlap'"):
        Chunking.from_mapping({"method": "size", "size": 100, "overlap": 100},
                              source="plan.yaml", record="v1")
    with pytest.raises(InputError, match=re.escape("field 'chunking.sise'")):
        Chunking.from_mapping({"method": "size", "sise": 100}, source="plan.yaml", record="v1")
