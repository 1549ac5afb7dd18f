"""The measures of one answer, built on a judge's two questions (support, relevance).

With S the answer's statements (:func:`recallwatch.answers.text.statements`), C its contexts
(in the order it was given them), and T the right answer — the query's ``reference`` answer cut
into statements, or else the quotes of its content anchors (the golden set's facts):

* **faithfulness** = |statements of S backed by C| / |S| (1 when S is empty: it says nothing
  unbacked); the answer is **hallucinated** when one statement is not backed.
* **relevance** = the judge's grade of how well the answer addresses the question, 0-1; the
  answer is relevant at 0.5 or more.
* **correctness** = the share of T the answer states: with a reference, the share of its
  statements the answer backs; with facts, the share of facts that back a statement of the
  answer. What the answer says beyond T is faithfulness's to judge (a statement of a sentence
  may hold a true detail T lacks: "1.184 euros al mes, 16.576 al año"). None without a reference
  or facts; 0 for an answer with no statement.
* **context recall** = the share of T that C holds: a reference's statements backed by C, or the
  facts whose quote C holds word for word; without T, the share of the query's expected chunks
  among C. None when C are texts and there is no T.
* **context precision** = the mean, over the relevant contexts, of the precision of the contexts
  up to each one (RAGAS's context precision: 1 when every relevant context comes before every
  other). A context is relevant when it is one of the query's expected chunks, or, given as a
  text, when it holds a fact or backs a statement of the reference.

An answer is **right** when it is relevant, not hallucinated, and (with T) its correctness is at
least :data:`CORRECT_AT`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from recallwatch.answers.judges import AnswerJudge, Support
from recallwatch.answers.text import contains, statements

__all__ = ["CORRECT_AT", "RELEVANT_AT", "AnswerScore", "Passage", "Truth", "score_answer",
           "truth_of"]

CORRECT_AT = 0.5
RELEVANT_AT = 0.5


@dataclass(frozen=True)
class Truth:
    """The right answer: a reference's statements, or facts (quotes), or nothing."""

    kind: Literal["reference", "facts"] | None
    items: tuple[str, ...] = ()


def truth_of(reference: str | None, facts: Sequence[str]) -> Truth:
    if reference:
        return Truth("reference", tuple(statements(reference)) or (reference,))
    if facts:
        return Truth("facts", tuple(facts))
    return Truth(None)


@dataclass(frozen=True)
class Passage:
    """A context of an answer: its text, and its chunk id when it is a chunk of the index."""

    text: str
    id: str | None = None


@dataclass(frozen=True)
class AnswerScore:
    faithfulness: float
    relevance: float
    correctness: float | None
    hallucinated: bool
    context_precision: float | None
    context_recall: float | None
    statements: tuple[tuple[str, Support], ...]

    @property
    def relevant(self) -> bool:
        return self.relevance >= RELEVANT_AT

    @property
    def correct(self) -> bool | None:
        return None if self.correctness is None else self.correctness >= CORRECT_AT

    @property
    def right(self) -> bool:
        return self.relevant and not self.hallucinated and self.correct is not False

    def to_dict(self) -> dict[str, Any]:
        return {
            "faithfulness": self.faithfulness, "relevance": self.relevance,
            "correctness": self.correctness, "hallucinated": self.hallucinated,
            "context_precision": self.context_precision, "context_recall": self.context_recall,
            "right": self.right,
            "statements": [{"text": text, "backed": s.backed, "score": s.score,
                            "evidence": s.evidence} for text, s in self.statements],
        }


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags)


def _correctness(judge: AnswerJudge, said: list[str], answer: str, truth: Truth,
                 question: str) -> float | None:
    if truth.kind is None:
        return None
    if not said:
        return 0.0
    if truth.kind == "reference":
        return _share(judge.matches(truth.items, [answer], question=question))
    # a fact (a quote of a source, a table maybe) counts when it states a statement of the
    # answer
    return _share([any(judge.matches(said, [fact], question=question)) for fact in truth.items])


def _holds(judge: AnswerJudge, passages: Sequence[str], truth: Truth,
           question: str) -> list[bool]:
    """Which items of the truth the passages hold."""
    if truth.kind == "facts":
        return [any(contains(p, fact) for p in passages) for fact in truth.items]
    return [s.backed for s in judge.support(truth.items, passages, question=question)]


def _context_recall(judge: AnswerJudge, contexts: Sequence[Passage], truth: Truth,
                    expected: Collection[str], question: str) -> float | None:
    if truth.kind is not None:
        return _share(_holds(judge, [c.text for c in contexts], truth, question))
    if expected and all(c.id is not None for c in contexts):
        ids = {c.id for c in contexts}
        return sum(e in ids for e in expected) / len(expected)
    return None


def _context_precision(judge: AnswerJudge, contexts: Sequence[Passage], truth: Truth,
                       expected: Collection[str], question: str) -> float | None:
    relevant: list[bool] = []
    for c in contexts:
        if c.id is not None and expected:
            relevant.append(c.id in expected)
        elif truth.kind is not None:
            relevant.append(any(_holds(judge, [c.text], truth, question)))
        else:
            return None
    hits, total = 0, 0.0
    for k, flag in enumerate(relevant, 1):
        if flag:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def score_answer(judge: AnswerJudge, question: str, answer: str, contexts: Sequence[Passage],
                 truth: Truth, expected: Collection[str] = ()) -> AnswerScore:
    """Every measure of one answer (see the module's documentation)."""
    said = statements(answer)
    texts = [c.text for c in contexts]
    support = judge.support(said, texts, question=question) if said else []
    return AnswerScore(
        faithfulness=_share([s.backed for s in support]) if support else 1.0,
        relevance=judge.relevance(question, answer),
        correctness=_correctness(judge, said, answer, truth, question),
        hallucinated=any(not s.backed for s in support),
        context_precision=_context_precision(judge, contexts, truth, expected, question),
        context_recall=_context_recall(judge, contexts, truth, expected, question),
        statements=tuple(zip(said, support)),
    )
