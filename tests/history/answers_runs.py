"""Gate runs that judged answers, for the history and dashboard tests: a run's answer summary and
per-query answers as the gate's answer step writes them (recallwatch.answers.gate)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from recallwatch.acceptance.model import GateResult


def with_answers(run: GateResult, faithfulness: float | None, relevance: float | None,
                 correctness: float | None, hallucination_rate: float | None) -> GateResult:
    """``run`` as if its answers had been judged, with these means (None: not trusted)."""
    summary: dict[str, Any] = {
        "faithfulness": faithfulness, "relevance": relevance, "correctness": correctness,
        "hallucination_rate": hallucination_rate, "context_precision": 0.5,
        "context_recall": 1.0, "answered": len(run.queries), "right": len(run.queries),
        "unanswered": [], "failures": None, "decomposition": "needs --generator",
        "judge": {"accepted": True}, "tokens": None}
    queries = tuple(replace(q, answer={
        "faithfulness": faithfulness, "relevance": relevance, "correctness": correctness,
        "hallucinated": False, "failure": None, "right": True, "statements": [],
        "text": f"the answer to {q.id}", "from": "answers file", "contexts": [],
        "truth": None, "oracle": None, "tokens": None}) for q in run.queries)
    return replace(run, answers=summary, queries=queries)
