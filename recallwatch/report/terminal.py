"""The terminal report: the verdict first, then what failed and where to look. Read in a minute."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from recallwatch.report._text import visible
from recallwatch.suite.model import CAUSE_ORDER, GateResult, QueryResult

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
    for d in q.diagnosis:
        lines.append(_t(f"    {d.line()}"))
    if q.waiver:
        lines.append(_t(f"    waiver: {q.waiver}", "dim"))
    return Text("\n").join(lines)


def _identity(result: GateResult) -> Text:
    d = result.dataset
    store = result.store
    where = (f"{store.get('uri')} version {store.get('version')}" if "uri" in store
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
    )
    parts: list[Any] = [banner, _identity(result)]
    if result.reasons:
        reasons = Table.grid(padding=(0, 1))
        for r in result.reasons:
            reasons.add_row(_t(r.rule, "bold red"), _t(r.message))
        parts.append(Panel(reasons, title="why STOP", border_style="red"))
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
    if result.comparison:
        parts.append(_comparison(result.comparison))
    t = result.timings
    parts.append(_t(f"{a.n_queries} queries in {t['total']:.2f}s (embed {t['embed']:.2f}s, "
                    f"search {t['search']:.2f}s, other {t['other']:.2f}s)", "dim"))
    return Group(*parts)


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
