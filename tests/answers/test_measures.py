"""The measures of one answer, computed by hand with a judge whose verdicts are given (a fake:
the formulas are what is tested here; the real judges are tested in test_gate_answers.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recallwatch.answers.judges import Support
from recallwatch.answers.measures import Passage, score_answer, truth_of


class WordJudge:
    """Backs a statement when a passage holds it word for word; relevance as given."""

    kind = "offline"

    def __init__(self, relevance: float = 1.0) -> None:
        self._relevance = relevance

    def support(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[Support]:
        return [Support(any(s.rstrip(".") in p for p in passages)) for s in statements]

    def relevance(self, question: str, answer: str) -> float:
        return self._relevance

    def matches(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[bool]:
        return [s.backed for s in self.support(statements, passages, question=question)]

    def describe(self) -> dict[str, Any]:
        return {}


def test_faithfulness_is_the_share_of_backed_statements() -> None:
    s = score_answer(WordJudge(), "q", "Uno dos tres. Cuatro cinco seis.",
                     [Passage("Uno dos tres y más.")], truth_of(None, []))
    assert (s.faithfulness, s.hallucinated, s.correctness) == (0.5, True, None)
    assert [b.backed for _, b in s.statements] == [True, False]


def test_correctness_is_the_share_of_the_reference_the_answer_states() -> None:
    reference = "El plazo es de un mes. Se avisa por escrito."
    s = score_answer(WordJudge(), "q", "El plazo es de un mes y algo más.", [Passage("x")],
                     truth_of(reference, []))
    assert s.correctness == 0.5  # one of the reference's two statements
    assert s.correct and not s.right  # hallucinated: the passages back nothing


def test_correctness_against_facts_counts_the_facts_the_answer_uses() -> None:
    facts = ["El plazo es de un mes para el Grupo 1", "quince días para el resto"]
    s = score_answer(WordJudge(), "q", "El plazo es de un mes.", [Passage(facts[0])],
                     truth_of(None, facts))
    assert s.correctness == 0.5
    assert s.context_recall == 0.5  # one fact of two is in the contexts word for word


def test_context_precision_rewards_relevant_contexts_first() -> None:
    truth = truth_of(None, [])
    ranked = [Passage("a", "x1"), Passage("b", "e1"), Passage("c", "x2"), Passage("d", "e2")]
    s = score_answer(WordJudge(), "q", "a b c.", ranked, truth, expected=["e1", "e2"])
    # relevant at ranks 2 and 4: (1/2 + 2/4) / 2
    assert s.context_precision == 0.5 and s.context_recall == 1.0
    first = score_answer(WordJudge(), "q", "a b c.", ranked[1::2] + ranked[::2], truth,
                         expected=["e1", "e2"])
    assert first.context_precision == 1.0


def test_an_answer_that_is_off_the_question_is_not_right() -> None:
    s = score_answer(WordJudge(relevance=0.2), "q", "Uno dos tres.", [Passage("Uno dos tres")],
                     truth_of(None, []))
    assert not s.hallucinated and not s.relevant and not s.right
