"""The Markdown report: a pull-request comment that says ACCEPT or STOP and why."""

from __future__ import annotations

from typing import Any

from recallwatch.acceptance.cost import cost_line
from recallwatch.acceptance.freshness import freshness_line
from recallwatch.acceptance.judged import judged_line
from recallwatch.acceptance.model import CAUSE_ORDER, GateResult
from recallwatch.acceptance.money import money_lines
from recallwatch.acceptance.pipeline import stage_lines, stages_line
from recallwatch.report._answers import (
    FAILURE_WORDS,
    answer_lines,
    answers_line,
    judge_line,
    wrong_answers,
)
from recallwatch.report._text import alternatives_line, anchor_line, md_escape, twin_line

__all__ = ["to_markdown"]


def to_markdown(result: GateResult) -> str:
    a = result.aggregate
    d = result.dataset
    icon = "✅" if result.verdict == "ACCEPT" else "⛔"
    out = [
        f"## {icon} recallwatch gate: **{result.verdict}**",
        "",
        f"Dataset **{md_escape(d['name'])}** v{md_escape(d['version'])} "
        f"(`{result.dataset_hash[:12]}`) · policy `{result.policy_hash[:12]}` · "
        f"config `{result.config_hash[:12]}` · run `{md_escape(result.run_id)}`",
    ]
    if "uri" in result.store:
        out.append(f"Store {md_escape(result.store['uri'])} · index version "
                   f"{md_escape(result.store.get('version'))}")
    split = result.split_line()
    if split:
        out.append(md_escape(split[0].upper() + split[1:]) + ".")
    out += [
        "",
        "| mean quality | mean recall | MRR | nDCG@K | P@K | failing | Gold failing |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {a.mean_quality:.1f} | {a.mean_recall:.3f} | {a.mrr:.3f} | {a.mean_ndcg:.3f} | "
        f"{a.mean_precision:.3f} | {a.failed_queries}/{a.n_queries} | {a.gold_failures} |",
        "",
    ]
    if a.mean_fact_recall is not None:
        n = sum(q.fact_recall is not None for q in result.queries)
        out += [f"Fact recall@K (share of the content anchors whose quote is in the top-K text): "
                f"**{a.mean_fact_recall:.3f}** over {n} queries with anchors.", ""]
    if result.judged:
        out += [md_escape(judged_line(result.judged)), ""]
    if result.stages:
        k = result.queries[0].top_k if result.queries else None
        out += [md_escape(stages_line(result.stages, k)), ""]
    if result.reasons:
        out.append("### Why STOP")
        out += [f"- **{md_escape(r.rule)}**: {md_escape(r.message)}" for r in result.reasons]
        out.append("")
    shown = [c for c in result.checks if c.status != "pass"] if result.reasons else [
        c for c in result.checks]
    if shown:
        out.append("### Policy limits")
        out += [f"- **{md_escape(c.rule)}** ({md_escape(c.status)}): {md_escape(c.message)}"
                for c in shown]
        out.append("")
    if result.freshness:
        out += [md_escape(freshness_line(result.freshness)), ""]
    if result.cost:
        out += [md_escape(cost_line(result.cost)), ""]
    if result.money:
        head, *rest = money_lines(result.money)
        out += [md_escape(head), "", *(f"- {md_escape(x.strip())}" for x in rest), ""]
    if result.warnings:
        out.append("### Warnings")
        out += [f"- {md_escape(w)}" for w in result.warnings]
        out.append("")
    if result.answers:
        out += _answers(result, result.answers)
    failing = result.failing()
    if failing:
        out += ["### Failing queries", ""]
        if any(x.cause != "noise" for q in failing for x in q.diagnosis):
            out += [f"Diagnosis: {CAUSE_ORDER}.", ""]
        out += ["| query (★ expects Gold) | rules | recall | quality | noise | missing (rank) | "
                "diagnosis |",
                "|---|---|---:|---:|---:|---|---|"]
        for q in failing:
            missing = ", ".join(f"{h.id} @ {h.rank or '>depth'}" for h in q.expected
                                if not h.in_top_k) or "—"
            diag = "<br>".join([*(md_escape(anchor_line(x)) for x in q.anchors),
                                *(md_escape(alternatives_line(g)) for g in q.alternatives),
                                *(md_escape(twin_line(t)) for t in q.twins),
                                *(md_escape(x) for x in stage_lines(q.stage)),
                                *(md_escape(x.line()) for x in q.diagnosis)])
            if q.waiver:
                diag += "<br>" + md_escape(f"waiver: {q.waiver}")
            out.append(
                f"| {md_escape(q.id)}{' ★' if q.has_gold else ''}: {md_escape(q.text)} | "
                f"{md_escape(','.join(q.failed_rules))} | {q.recall:.3f} | {q.quality:.0f} | "
                f"{q.noise}/{q.allowed_noise} | {md_escape(missing)} | {diag} |"
            )
        out.append("")
    if result.patterns:
        out.append("### Patterns")
        out += [f"- **{md_escape(p.name)}**: {md_escape(p.message)}" for p in result.patterns]
        out.append("")
    if result.comparison:
        out.append("### Compared with earlier runs")
        for label, key in (("previous run", "previous"), ("last accepted", "last_accepted")):
            c = result.comparison.get(key)
            if not c:
                out.append(f"- {label}: none")
            elif not c.get("comparable", True):
                out.append(f"- {label} `{md_escape(c.get('run_id'))}`: not comparable "
                           f"({md_escape(c.get('why'))})")
            else:
                out.append(f"- {label} `{md_escape(c.get('run_id'))}`: "
                           f"{md_escape(c.get('summary', ''))}")
                out += [f"  - {md_escape(x)}" for x in c.get("details", [])[:10]]
        out.append("")
    return "\n".join(out) + "\n"


def _answers(result: GateResult, answers: dict[str, Any]) -> list[str]:
    """The answers judged: the measures, the judge's trust, a table of the wrong answers."""
    out = ["### Answers", "", md_escape(answers_line(answers)), "",
           md_escape(judge_line(answers)), ""]
    wrong = wrong_answers(result)
    if wrong:
        named = any(q.answer and q.answer.get("failure") for q in wrong)
        out += [md_escape(f"Wrong answers ({len(wrong)})"
                          + (f"; {FAILURE_WORDS}." if named else ".")), "",
                "| query | failure and figures | answer |", "|---|---|---|"]
        for q in wrong:
            first, *rest = answer_lines(q)
            out.append(f"| {md_escape(q.id)} | {md_escape(first.split(': ', 1)[1])} | "
                       + "<br>".join(md_escape(line) for line in rest) + " |")
        out.append("")
    return out
