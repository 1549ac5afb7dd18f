"""How every report words the answers of a run (``gate --answers`` / ``--generator``): the same
lines in the terminal, Markdown and HTML reports. They read only the result's ``answers`` and
each query's ``answer`` (plain data, see ``recallwatch.answers.gate``)."""

from __future__ import annotations

from typing import Any

from recallwatch.acceptance.model import GateResult, QueryResult

__all__ = ["FAILURE_WORDS", "answer_figures", "answer_lines", "answer_status", "answers_line",
           "judge_line", "statement_note", "wrong_answers"]

# What the failure names mean, shown once above the wrong answers.
FAILURE_WORDS = ("failure names: retrieval = the generator answers right from the query's "
                 "expected chunks alone, wrong from the retrieved chunks; generation = wrong even "
                 "though the retrieved chunks held every expected one; both = wrong from the "
                 "expected chunks too, and the retrieval missed some")

_MEASURES = (("faithfulness", "faithfulness"), ("relevance", "relevance"),
             ("correctness", "correctness"), ("hallucination_rate", "hallucination rate"),
             ("context_precision", "context precision"), ("context_recall", "context recall"))


def _num(value: object) -> str:
    return "— (not trusted)" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]


def answers_line(answers: dict[str, Any]) -> str:
    """The run's answer measures in one line."""
    parts = [f"{name} {_num(answers.get(key))}" for key, name in _MEASURES
             if key in answers]
    line = "answers: " + ", ".join(parts)
    if "answered" in answers:
        line += f"; {answers['right']} of {answers['answered']} answers right"
    failures = answers.get("failures")
    if failures:
        line += ("; wrong answers by failure: " + ", ".join(
            f"{kind} {n}" for kind, n in failures.items()))
    elif answers.get("decomposition"):
        line += f"; {answers['decomposition']}"
    return line


def judge_line(answers: dict[str, Any]) -> str:
    """Who judged, and how far it may be trusted (its agreement with people)."""
    judge = answers.get("judge") or {}
    who = judge.get("judge") or {}
    name = who.get("kind", "?")
    if name == "offline":
        name = (f"offline ({who.get('embedder')}, {who.get('thresholds')} thresholds: support "
                f"{_num(who.get('support_threshold'))}, relevance "
                f"{_num(who.get('relevance_threshold'))})")
    elif name == "llm":
        name = f"LLM {who.get('model')!s} at {who.get('base_url')!s}"
    kappas = ", ".join(
        f"{label} kappa {'undefined' if a.get('kappa') is None else format(a['kappa'], '.3f')}"
        for label, a in (judge.get("agreement") or {}).items())
    head = ("trusted for " + ", ".join(judge.get("trusted", [])) if judge.get("accepted")
            else "REFUSED")
    reasons = "; ".join(judge.get("reasons", []))
    return (f"answer judge {name}: {head}, against {judge.get('labelled', 0)} answers people "
            f"labelled" + (f" ({kappas}; floor {judge.get('min_kappa')})" if kappas else "")
            + (f"; {reasons}" if reasons else ""))


def wrong_answers(result: GateResult) -> list[QueryResult]:
    """The queries whose answer is wrong by a trusted measure."""
    return [q for q in result.queries if q.answer is not None and not q.answer.get("right")]


def answer_status(q: QueryResult) -> tuple[str, str] | None:
    """A query's answer in a word or two, and its badge (pass or fail): ``right``, its failure
    (``retrieval failure``, ``generation failure``, ``both failure``), or ``wrong`` when no
    generator named it; None when the query was not answered."""
    a = q.answer
    if a is None:
        return None
    if a.get("right"):
        return "right", "pass"
    failure = a.get("failure")
    return (f"{failure} failure" if failure else "wrong"), "fail"


def statement_note(statement: dict[str, Any]) -> str:
    """Why a statement was judged as it was: the passage unit closest to it and their similarity
    (offline judge; none when no unit holds its numbers), or the LLM judge's reply."""
    score, evidence = statement.get("score"), statement.get("evidence")
    if score is None:
        return f"the judge replied {evidence}" if evidence is not None else ""
    if evidence is None:
        return "no passage holds its numbers"
    text = " ".join(str(evidence).split())
    return (f"similarity {float(score):.3f} to “{text if len(text) <= 100 else text[:99] + '…'}”")


def answer_figures(q: QueryResult) -> str:
    """An answer's faithfulness, relevance and correctness ("— (not trusted)" for a measure the
    judge is not trusted with)."""
    a = q.answer or {}
    return ", ".join(f"{key} {_num(a.get(key))}" for key in
                     ("faithfulness", "relevance", "correctness"))


def answer_lines(q: QueryResult) -> list[str]:
    """A wrong answer: its figures and failure, what it said, what was unbacked, and the oracle
    answer's outcome."""
    a = q.answer or {}
    failure = a.get("failure")
    figures = answer_figures(q)
    text = " ".join(str(a.get("text", "")).split())
    named = f"{failure} failure; " if failure else ""
    if failure == "retrieval" and a.get("expected_in_context"):
        named = ("retrieval failure (noise: its expected chunks were retrieved, with others that "
                 "misled the generator); ")
    lines = [f"{q.id}: {named}{figures}",
             f"answer: “{text if len(text) <= 160 else text[:159] + '…'}”"]
    unbacked = [s["text"] for s in a.get("statements", []) if not s.get("backed")]
    if unbacked and a.get("hallucinated") is not None:
        lines.append("not backed by its contexts: " + "; ".join(f"“{s[:100]}”"
                                                                for s in unbacked[:3]))
    oracle = a.get("oracle")
    if oracle is not None:
        lines.append("from its expected chunks alone the generator answers "
                     + ("right" if oracle.get("right") else "wrong too")
                     + f" (correctness {_num(oracle.get('correctness'))})")
    return lines
