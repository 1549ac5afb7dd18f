"""Duplicate chunks: exact (the same text once normalised) and near (about 90 % or more of their
three-word sequences shared, estimated from 64 MinHash values), found in near-linear time."""

from __future__ import annotations

import random

import pytest

from recallwatch.formats import duplicates as dup
from recallwatch.formats.duplicates import DuplicateFinder, find_duplicates
from recallwatch.records import Chunk

WORDS = [f"w{i}" for i in range(3000)]


def _text(rng: random.Random, n: int = 60) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _jaccard(a: str, b: str) -> float:
    def shingles(t: str) -> set[tuple[str, ...]]:
        w = t.split()
        return {tuple(w[i:i + 3]) for i in range(len(w) - 2)}
    x, y = shingles(a), shingles(b)
    return len(x & y) / len(x | y)


def test_exact_duplicates_are_equal_after_case_and_whitespace_normalisation() -> None:
    chunks = [Chunk("a", "Return the date."), Chunk("b", "other"),
              Chunk("c", "return  the\nDATE."), Chunk("d", "x", content="Return the date."),
              Chunk("e", "other"), Chunk("f", "Return the date!")]
    found = find_duplicates(chunks)
    # content, when a chunk has one, is what is compared (what a reader is shown)
    assert found.exact == (("a", "c", "d"), ("b", "e"))
    assert found.exact_chunks == 5 and found.twins()["c"] == ("a", "d")
    assert found.near == ()
    assert found.lines()[0] == (
        "5 of 6 chunks have identical text, in 2 group(s) (a = c = d; b = e): a query that "
        "expects one is answered by any of them; the gate counts an identical twin in the top "
        "K as found and says so (policy twins_count_as_found), or remove the copies")


def test_a_near_duplicate_is_found_and_a_moderately_similar_text_is_not() -> None:
    rng = random.Random(3)
    base = _text(rng, 100)
    words = base.split()
    near = " ".join([*words[:50], "changed", *words[51:]])  # one word of 100: Jaccard 0.94
    half = " ".join([*words[:50], *_text(rng, 50).split()])  # Jaccard about 1/3
    chunks = [Chunk("base", base), Chunk("near", near), Chunk("half", half),
              *(Chunk(f"r{i}", _text(rng)) for i in range(200))]
    assert _jaccard(base, near) > 0.9 > 0.5 > _jaccard(base, half)
    found = find_duplicates(chunks)
    assert [(a, b) for a, b, _ in found.near] == [("base", "near")]
    assert found.near[0][2] >= dup.NEAR_AGREE / dup.MINHASH_VALUES
    assert found.exact == () and found.near_complete
    assert found.lines() == [
        f"1 pair(s) of chunks are near duplicates, sharing about 90 % or more of their "
        f"three-word sequences (base ~ near ({found.near[0][2]:.2f})): if both answer the same "
        "questions, list them in the golden set as {any: [A, B]}"]


def test_exact_copies_are_not_also_reported_as_near_and_texts_without_words_are_skipped(
        ) -> None:
    rng = random.Random(5)
    text = _text(rng)
    chunks = [Chunk("a", text), Chunk("b", text.upper()), Chunk("c", "   "),
              Chunk("d", "\t"), Chunk("e", "one"), Chunk("f", "One")]
    found = find_duplicates(chunks)
    assert found.exact == (("a", "b"), ("c", "d"), ("e", "f")) and found.near == ()


def test_the_result_is_the_same_however_the_chunks_are_batched() -> None:
    rng = random.Random(11)
    texts = [_text(rng) for _ in range(1300)]  # over two batches of MinHash computation
    texts[1200] = " ".join([*texts[7].split()[:-1], "end"])
    chunks = [Chunk(f"c{i:04d}", t) for i, t in enumerate(texts)]
    whole = find_duplicates(chunks)
    one_by_one = DuplicateFinder()
    for c in chunks:
        one_by_one.add(c)
    assert one_by_one.result() == whole
    assert [(a, b) for a, b, _ in whole.near] == [("c0007", "c1200")]


def test_the_cap_on_candidate_pairs_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dup, "MAX_CANDIDATE_PAIRS", 3)
    base = "a b c d e f g h i j k l m n o p q r s t"
    chunks = [Chunk(f"c{i}", f"{base} {i}") for i in range(6)]  # all near one another
    found = find_duplicates(chunks)
    assert not found.near_complete
    assert found.lines()[-1] == (
        "the near-duplicate search stopped after 3 candidate pairs (many chunks share long "
        "passages): the near duplicates listed are some, not all")


def test_exact_only_and_counts_for_json() -> None:
    chunks = [Chunk("a", "same text here"), Chunk("b", "same text here"),
              Chunk("c", "same text here too")]
    found = find_duplicates(chunks, near=False)
    assert found.to_dict() == {"exact_groups": 1, "exact_chunks": 2, "near_pairs": 0,
                               "near_complete": True, "exact": [["a", "b"]], "near": []}
    assert find_duplicates([]).lines() == []
