"""The policy's rules on the answers of a RAG assistant (``gate --answers`` / ``--generator``).

    min_faithfulness: 0.90        # mean share of an answer's statements its contexts back
    min_answer_relevance: 0.80    # mean relevance of the answers to their questions (0-1)
    max_hallucination_rate: 0.05  # share of answers with at least one unbacked statement

Each is absent by default (no rule). A run whose answers miss one of them stops, naming the rule
and the queries, as the retrieval rules do.

``max_drop`` (:mod:`recallwatch.formats.policy_limits`) may also name the answer measures of
:data:`ANSWER_DROPS` — ``faithfulness``, ``answer_relevance``, ``correctness`` and
``hallucination_rate`` (for which the drop is a rise) — judged against the baseline's answers as
the rank measures are::

    max_drop: {nDCG@10: 0.02, faithfulness: 0.05, hallucination_rate: 0.05}
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallwatch.formats.fields import bounded

__all__ = ["ANSWER_DROPS", "ANSWER_KEYS", "AnswerDrop", "AnswerRules", "parse_answer_rules"]

ANSWER_KEYS = {"min_faithfulness", "min_answer_relevance", "max_hallucination_rate"}


@dataclass(frozen=True)
class AnswerDrop:
    """An answer measure ``max_drop`` may name: where its per-query value is in a query's judged
    answer (``key``; a flag counts 1 when true), the judge's measure it needs to be trusted with,
    and whether higher is better (else its drop is a rise)."""

    key: str
    measure: str
    higher_is_better: bool = True


ANSWER_DROPS = {
    "faithfulness": AnswerDrop("faithfulness", "faithfulness"),
    "answer_relevance": AnswerDrop("relevance", "relevance"),
    "correctness": AnswerDrop("correctness", "correctness"),
    "hallucination_rate": AnswerDrop("hallucinated", "hallucination", higher_is_better=False),
}


@dataclass(frozen=True)
class AnswerRules:
    min_faithfulness: float | None = None
    min_answer_relevance: float | None = None
    max_hallucination_rate: float | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in self.rules_dict().values())

    def rules_dict(self) -> dict[str, Any]:
        """Only the rules that are set: a policy without them keeps the hash it always had."""
        values = {"min_faithfulness": self.min_faithfulness,
                  "min_answer_relevance": self.min_answer_relevance,
                  "max_hallucination_rate": self.max_hallucination_rate}
        return {k: v for k, v in values.items() if v is not None}


def parse_answer_rules(data: dict[str, Any], source: Path, line: int | None) -> AnswerRules:
    def fraction(key: str) -> float | None:
        value = data.get(key)
        if value is None:
            return None
        return float(bounded(value, 0.0, 1.0, source=source, line=line, field=key,
                             integer=False))

    return AnswerRules(min_faithfulness=fraction("min_faithfulness"),
                       min_answer_relevance=fraction("min_answer_relevance"),
                       max_hallucination_rate=fraction("max_hallucination_rate"))
