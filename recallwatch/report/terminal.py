"""The terminal report: the verdict first, then what failed and where to look. Read in a minute."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from recallwatch.acceptance.cost import cost_line
from recallwatch.acceptance.freshness import freshness_line
from recallwatch.acceptance.judged import judged_line
from recallwatch.acceptance.model import CAUSE_ORDER, GateResult, QueryResult
from recallwatch.acceptance.money import money_lines
from recallwatch.acceptance.pipeline import stage_lines, stages_line
from recallwatch.report._answers import (
    FAILURE_WORDS,
    answer_lines,
    answers_line,
    judge_line,
    wrong_answers,
)
from recallwatch.report._text import alternatives_line, anchor_line, twin_line, visible

__all__ = ["print_report", "render"]


def _t(value: object, style: str = "") -> Text:
    # Text(), not markup: "[bold]" in a query is shown as typed, never interpreted.
    return Text(visible(value), style=style)


def _missing(q: QueryResult) -> Text:
    parts = [
        f"{h.id}{' (Gold)' if h.gold else ''} @ {h.rank if h.rank else '>depth'}"
        for h in q.expected if not h.in_top_k
    ]
    return _t(", ".join(parts) or "—")


def _failing_block(q: QueryResult) -> Text:
    head = Text.assemble(
        ("✗ ", "bold red"), (visible(q.id), "bold"), (" ★Gold" if q.has_gold else "", "yellow"),
        f"  recall {q.recall:.3f}  quality {q.quality:.0f}  noise {q.noise}/{q.allowed_noise}  ",
        (f"[{', '.join(q.failed_rules)}]", "red"),
    )
    lines = [head, _t(f"    “{q.text}”", "italic")]
    if any(not h.in_top_k for h in q.expected):
        lines.append(Text.assemble("    missing: ", _missing(q)))
    if q.fact_recall is not None:
        lines.append(_t(f"    fact recall@{q.top_k} {q.fact_recall:.3f}"))
        lines += [_t(f"    {anchor_line(a)}") for a in q.anchors]
    lines += [_t(f"    {alternatives_line(g)}") for g in q.alternatives]
    lines += [_t(f"    {twin_line(t)}") for t in q.twins]
    lines += [_t(f"    {line}") for line in stage_lines(q.stage)]
    for d in q.diagnosis:
        lines.append(_t(f"    {d.line()}"))
    if q.waiver:
        lines.append(_t(f"    waiver: {q.waiver}", "dim"))
    return Text("\n").join(lines)


def _identity(result: GateResult) -> Text:
    d = result.dataset
    store = result.store
    where = (f"{store.get('uri')} version {store.get('version')}" if "uri" in store
             else f"pipeline {store['pipeline']}" if "pipeline" in store
             else f"results {store.get('results_file', '')}")
    return _t(
        f"dataset {d['name']} v{d['version']} #{result.dataset_hash[:12]} · "
        f"policy #{result.policy_hash[:12]} · config #{result.config_hash[:12]} · {where} · "
        f"run {result.run_id}",
        "dim",
    )


def render(result: GateResult) -> Group:
    ok = result.verdict == "ACCEPT"
    a = result.aggregate
    banner = Text.assemble(
        (f" {result.verdict} ", "bold white on green" if ok else "bold white on red"),
        "  ",
        (f"mean quality {a.mean_quality:.1f}  recall {a.mean_recall:.3f}  MRR {a.mrr:.3f}  "
         f"nDCG {a.mean_ndcg:.3f}  P@K {a.mean_precision:.3f}  "
         f"failing {a.failed_queries}/{a.n_queries} (Gold {a.gold_failures})", "bold"),
        (f"  fact recall {a.mean_fact_recall:.3f}" if a.mean_fact_recall is not None else "",
         "bold"),
    )
    parts: list[Any] = [banner, _identity(result)]
    split = result.split_line()
    if split:
        parts.append(_t(split, "bold"))
    if result.judged:
        parts.append(_t(judged_line(result.judged), "dim"))
    if result.stages:
        k = result.queries[0].top_k if result.queries else None
        parts.append(_t(stages_line(result.stages, k), "bold"))
    if result.reasons:
        reasons = Table.grid(padding=(0, 1))
        for r in result.reasons:
            reasons.add_row(_t(r.rule, "bold red"), _t(r.message))
        parts.append(Panel(reasons, title="why STOP", border_style="red"))
    if a.mean_fact_recall is not None:
        parts.append(_t(_anchor_summary(result), "dim"))
    if result.answers:
        parts += _answers(result, result.answers)
    failing = result.failing()
    if failing:
        parts.append(_t(f"failing queries ({len(failing)})", "bold"))
        if any(d.cause != "noise" for q in failing for d in q.diagnosis):
            parts.append(_t(f"  diagnosis: {CAUSE_ORDER}", "dim"))
        parts += [_failing_block(q) for q in failing]
    for p in result.patterns:
        parts.append(_t(f"pattern {p.name}: {p.message} ({', '.join(p.queries[:8])})", "yellow"))
    for w in result.warnings:
        parts.append(_t(f"warning: {w}", "yellow"))
    # The policy's run-level limits: a blocking one is a reason above; a drop within noise and a
    # limit that could not be applied say why here; the met ones are counted.
    for c in result.checks:
        if c.status in ("within noise", "not applied"):
            parts.append(_t(f"{c.rule} {c.status}: {c.message}",
                            "yellow" if c.status == "within noise" else "dim"))
    met = sum(c.status == "pass" for c in result.checks)
    if met:
        parts.append(_t(f"{met} policy limit{'s' if met != 1 else ''} met: "
                        + ", ".join(f"{c.rule} {c.subject}" for c in result.checks
                                    if c.status == "pass"), "dim"))
    if result.comparison:
        parts.append(_comparison(result.comparison))
    if result.freshness:
        parts.append(_t(freshness_line(result.freshness), "dim"))
    if result.cost:
        parts.append(_t(cost_line(result.cost), "dim"))
    if result.money:
        parts.append(_t("\n".join(money_lines(result.money)), "dim"))
    t = result.timings
    parts.append(_t(f"{a.n_queries} queries in {t.total:.2f}s (embed {t.embed:.2f}s, "
                    f"search {t.search:.2f}s, other {t.other:.2f}s)", "dim"))
    return Group(*parts)


def _answers(result: GateResult, answers: dict[str, Any]) -> list[Text]:
    """The answers judged: the run's measures, the judge's trust, then each wrong answer."""
    out = [_t(answers_line(answers), "bold"), _t(judge_line(answers), "dim")]
    wrong = wrong_answers(result)
    if wrong:
        named = any(q.answer and q.answer.get("failure") for q in wrong)
        out.append(_t(f"wrong answers ({len(wrong)})" + (f"; {FAILURE_WORDS}" if named else ""),
                      "dim"))
        for q in wrong:
            first, *rest = answer_lines(q)
            out.append(Text.assemble(("✗ ", "bold red"), _t(first)))
            out += [_t(f"    {line}") for line in rest]
    return out


def _anchor_summary(result: GateResult) -> str:
    """How the content anchors resolved, in one line (the detail is in each failing query)."""
    rows = [a for q in result.queries for a in q.anchors]
    split = sum(a.get("kind") == "split" for a in rows)
    several = sum(a.get("kind") == "whole" and len(a.get("chunks", [])) > 1 for a in rows)
    missed = sum(not a.get("in_context") for a in rows)
    return (f"content anchors: {len(rows)} resolved ({split} split across chunks, {several} held "
            f"whole by several chunks); {missed} quote(s) not in their query's top-K")


def _comparison(comparison: dict[str, Any]) -> Text:
    lines = []
    for label, key in (("previous run", "previous"), ("last accepted", "last_accepted")):
        c = comparison.get(key)
        if not c:
            lines.append(f"vs {label}: none")
            continue
        if not c.get("comparable", True):
            lines.append(f"vs {label} {c.get('run_id')}: not comparable ({c.get('why')})")
            continue
        lines.append(f"vs {label} {c.get('run_id')}: {c.get('summary', '')}")
        for line in c.get("details", [])[:10]:
            lines.append(f"    {line}")
    return _t("\n".join(lines))


def print_report(result: GateResult, console: Console | None = None) -> None:
    (console or Console()).print(render(result))
