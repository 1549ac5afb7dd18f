"""The policy's rules on the answers of a RAG assistant (``gate --answers`` / ``--generator``).

    min_faithfulness: 0.90        # mean share of an answer's statements its contexts back
    min_answer_relevance: 0.80    # mean relevance of the answers to their questions (0-1)
    max_hallucination_rate: 0.05  # share of answers with at least one unbacked statement

Each is absent by default (no rule). A run whose answers miss one of them stops, naming the rule
and the queries, as the retrieval rules do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallwatch.formats.fields import bounded

__all__ = ["ANSWER_KEYS", "AnswerRules", "parse_answer_rules"]

ANSWER_KEYS = {"min_faithfulness", "min_answer_relevance", "max_hallucination_rate"}


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
