"""α-nDCG@k against ndeval (TREC's diversity evaluator, through pyndeval) on generated
diversity judgments, and on small cases worked by hand."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallwatch.errors import InputError, UsageError
from recallwatch.metrics.diversity import SubtopicQrels, alpha_ndcg
from tests.reference import reference_library

pyndeval = reference_library("pyndeval")


def test_a_hand_worked_case() -> None:
    # subtopics: a covers 1 and 2, b covers 2, c covers 3; the run ranks b, a, c
    qrels = SubtopicQrels.from_rows([("q", "1", "a", 1), ("q", "2", "a", 1), ("q", "2", "b", 1),
                                     ("q", "3", "c", 1), ("q", "1", "x", 0)])
    run = {"q": {"b": 3.0, "a": 2.0, "c": 1.0, "x": 0.5}}
    # gains: b 1; a 1 (new subtopic 1) + 0.5 (subtopic 2 seen once); c 1; x 0
    dcg = 1 / math.log2(2) + 1.5 / math.log2(3) + 1 / math.log2(4)
    # greedy ideal: a (2), then c (1), then b (0.5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 0.5 / math.log2(4)
    assert alpha_ndcg(qrels, run, 10)["q"] == pytest.approx(dcg / ideal)
    assert alpha_ndcg(qrels, run, 1)["q"] == pytest.approx(1 / 2)
    # α = 0: redundancy is not penalised, a second document on subtopic 2 counts in full
    assert alpha_ndcg(qrels, run, 2, alpha=0.0)["q"] == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


@st.composite
def diversity(draw: Any) -> tuple[list[tuple[str, str, str, int]], dict[str, dict[str, float]]]:
    docs = [f"d{i}" for i in range(10)]
    rows = []
    run: dict[str, dict[str, float]] = {}
    for q in range(draw(st.integers(1, 4))):
        qid = str(q + 1)
        for s in range(draw(st.integers(1, 4))):
            for d in draw(st.lists(st.sampled_from(docs), max_size=5, unique=True)):
                rows.append((qid, str(s + 1), d, draw(st.integers(0, 2))))
        if draw(st.booleans()) or q == 0:
            ranked = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=10, unique=True))
            run[qid] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    return rows, run


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(diversity(), st.sampled_from([5, 10, 20]))
def test_matches_ndeval(data: tuple[list[tuple[str, str, str, int]],
                                    dict[str, dict[str, float]]], k: int) -> None:
    rows, run = data
    ours = alpha_ndcg(SubtopicQrels.from_rows(rows), run, k)
    reference = pyndeval.ndeval(rows, [(q, d, s) for q, docs in run.items()
                                       for d, s in docs.items()], measures=[f"alpha-nDCG@{k}"])
    for qid, value in ours.items():
        expected = reference.get(qid, {}).get(f"alpha-nDCG@{k}", 0.0)
        assert value == pytest.approx(expected, abs=1e-9), qid


def test_the_ideal_breaks_ties_as_ndeval() -> None:
    # a, b, c each cover two subtopics: the first ideal pick is a tie; ndeval takes the largest
    # id (c, covering 2 and 4), which leaves less to gain later than a (1 and 4) would
    rows = [("1", "1", "a", 1), ("1", "4", "a", 1), ("1", "2", "b", 1), ("1", "3", "b", 1),
            ("1", "2", "c", 1), ("1", "4", "c", 1)]
    for doc in "abc":
        ours = alpha_ndcg(SubtopicQrels.from_rows(rows), {"1": {doc: 1.0}}, 5)["1"]
        reference = pyndeval.ndeval(rows, [("1", doc, 1.0)], measures=["alpha-nDCG@5"])
        assert ours == pytest.approx(reference["1"]["alpha-nDCG@5"], abs=1e-9)
    ideal = 2 + 1.5 / math.log2(3) + 1.5 / math.log2(4)  # c, then b and a at 1.5 each
    assert alpha_ndcg(SubtopicQrels.from_rows(rows), {"1": {"c": 1.0}}, 5)["1"] == \
        pytest.approx(2 / ideal)


def test_reading_diversity_qrels(tmp_path: Path) -> None:
    path = tmp_path / "qrels"
    path.write_text("# comment\n1 1 a 1\n1 2 a 1\n1 2 b 0\n")
    assert SubtopicQrels.from_trec(path).relevant == {"1": {"a": frozenset({"1", "2"})}}
    path.write_text("1 1 a 1\n1 1 a 2\n")
    with pytest.raises(InputError, match=r"qrels:2: .*a for subtopic 1 again \(first on line 1"):
        SubtopicQrels.from_trec(path)
    with pytest.raises(UsageError, match="alpha must be in"):
        alpha_ndcg(SubtopicQrels.from_rows([("q", "1", "a", 1)]), {}, 5, alpha=1.0)
