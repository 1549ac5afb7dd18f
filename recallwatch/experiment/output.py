"""An experiment's files: ``results.json`` (the contract), ``results.md`` (the table for a pull
request) and ``report.html`` (self-contained, with the quality-vs-cost frontier)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallwatch.experiment.runner import ExperimentResult

__all__ = ["TEMPLATES", "frontier", "frontier_chart", "table_rows", "to_markdown", "to_text",
           "view", "write_outputs"]

TEMPLATES = Path(__file__).parent / "templates"
_HEADER = ["variant", "verdict", "quality", "recall@K", "nDCG@K", "MRR", "fact recall@K",
           "judged@K", "Δ quality (p)", "win/tie/loss", "Δ nDCG@K (p)", "ingest s", "store",
           "p50 ms", "p99 ms"]


def _num(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _bytes(n: int | None) -> str:
    if n is None:
        return "—"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _delta(is_base: bool, test: dict[str, Any] | None, fmt: str) -> str:
    """``+0.121 (p=0.0009) *``: the difference from the base and its p-value after Holm."""
    if is_base:
        return "base"
    if test is None:
        return "—"
    mark = " *" if test["significant"] else ""
    return f"{format(test['delta'], '+' + fmt)} (p={test['p_holm']:.2g}){mark}"


def table_rows(data: Mapping[str, Any]) -> list[list[str]]:
    """One row per variant of a ``results.json`` record, best mean quality first (the base where
    it ranks)."""
    rows = []
    ranked = sorted(data["variants"], key=lambda v: -(v["metrics"]["mean_quality"] or 0.0))
    for v in ranked:
        m, cost, tests = v["metrics"], v["cost"], v.get("vs_base") or {}
        is_base = v["name"] == data["base"]
        vs = tests.get("mean_quality")
        delta = _delta(is_base, vs, ".1f")
        ndcg = _delta(is_base, tests.get("mean_ndcg"), ".3f")
        wtl = "—" if vs is None else f"{vs['wins']}/{vs['ties']}/{vs['losses']}"
        name = v["name"] + (" (winner)" if v["name"] == data["winner"] else "")
        rows.append([name, v["verdict"], _num(m["mean_quality"], ".1f"),
                     _num(m["mean_recall"], ".3f"), _num(m["mean_ndcg"], ".3f"),
                     _num(m["mrr"], ".3f"), _num(m["mean_fact_recall"], ".3f"),
                     _num(m.get("judged_at_k"), ".2f"), delta, wtl, ndcg,
                     _num(cost["ingest_seconds"], ".1f"), _bytes(cost["store_bytes"]),
                     _num(cost["search_p50_ms"], ".1f"), _num(cost["search_p99_ms"], ".1f")])
    return rows


def _legend(data: Mapping[str, Any]) -> str:
    queries = "test" if data["judged_on"] == "test" else "all"
    return (f"Variants on the {queries} queries, best mean quality first. Δ: the difference "
            "from the base, p its p-value after Holm's correction across the variants (paired "
            "randomization test; * significant at 0.05); win/tie/loss: queries whose quality "
            "rose, stayed, fell; judged@K: the share of the top K that is labelled (an "
            "unlabelled result counts as not relevant); ingest s and store: the dense index "
            "build (— for BM25 alone); p50/p99: search latency, one call per query.")


def to_text(result: ExperimentResult) -> str:
    """The table for a terminal: aligned columns, every cell made safe to print."""
    from recallwatch.report import visible

    data = result.to_dict()
    rows = [_HEADER, *([visible(c) for c in row] for row in table_rows(data))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines = ["  ".join([r[0].ljust(widths[0]), r[1].ljust(widths[1])]
                       + [c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True)]).rstrip()
             for r in rows]
    return "\n".join([_legend(data), "", *lines, "", *(visible(s) for s in result.summary())])


def to_markdown(result: ExperimentResult) -> str:
    from recallwatch.report import md_escape as _md

    data = result.to_dict()
    lines = [_md(_legend(data)), "",
             "| " + " | ".join(_HEADER) + " |", "|---|---|" + "---:|" * (len(_HEADER) - 2)]
    for row in table_rows(data):
        lines.append("| " + " | ".join(_md(c) for c in row) + " |")
    lines += ["", *(_md(s) for s in result.summary())]
    return "\n".join(lines) + "\n"


def frontier(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each variant's mean quality against its p99 search latency, and whether it is on the
    frontier (no other variant is both faster and at least as good)."""
    points: list[dict[str, Any]] = []
    for v in data["variants"]:
        points.append({"name": v["name"], "quality": v["metrics"]["mean_quality"] or 0.0,
                       "p99_ms": v["cost"]["search_p99_ms"]})
    timed = [p for p in points if p["p99_ms"] is not None]
    for p in points:
        p["frontier"] = p["p99_ms"] is not None and not any(
            q is not p and q["p99_ms"] <= p["p99_ms"] and q["quality"] >= p["quality"]
            and (q["p99_ms"] < p["p99_ms"] or q["quality"] > p["quality"]) for q in timed)
    return points


def frontier_chart(data: Mapping[str, Any]) -> Any:
    """The quality-vs-cost plot of a ``results.json`` record (the report's and the dashboard's)."""
    from recallwatch.report import plots

    points = [p for p in frontier(data) if p["p99_ms"] is not None]
    on = sorted((p for p in points if p["frontier"]), key=lambda p: p["p99_ms"])
    off = [p for p in points if not p["frontier"]]

    def tip(p: dict[str, Any]) -> str:
        return f"{p['name']}: quality {p['quality']:.1f}, p99 {p['p99_ms']:.1f} ms"

    # every point named beside it (plots places the names where they overlap nothing)
    series = [plots.Series("on the frontier", [p["p99_ms"] for p in on],
                           [p["quality"] for p in on], [tip(p) for p in on], line=True,
                           labels=[p["name"] for p in on])]
    if off:
        series.append(plots.Series("dominated", [p["p99_ms"] for p in off],
                                   [p["quality"] for p in off], [tip(p) for p in off],
                                   line=False, labels=[p["name"] for p in off]))
    return plots.scatter("Quality against cost: the variants no other beats on both",
                         series, x_label="search latency p99 (ms)",
                         y_label="mean quality (points, 0–100)", connect=True)


def view(data: Mapping[str, Any]) -> dict[str, Any]:
    """What the experiment's page shows (the report's and the dashboard's): the table's header
    and rows, the summary lines, the plot and its points, the winner."""
    return {"header": _HEADER, "rows": table_rows(data), "legend": _legend(data),
            "summary": list(data.get("summary") or []), "chart": frontier_chart(data),
            "points": frontier(data), "winner": data["winner"]}


def to_html(result: ExperimentResult) -> str:
    from recallwatch.report.html import render

    data = result.to_dict()
    return render("experiment.html", [TEMPLATES], title=f"recallwatch experiment — "
                  f"{result.plan.source.name}", exp=view(data), data=data)


def write_outputs(result: ExperimentResult, out: Path) -> list[Path]:
    """Write the three files, each replaced whole (never left half-written)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"results.json": json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n",
             "results.md": to_markdown(result), "report.html": to_html(result)}
    written = []
    for name, text in files.items():
        tmp = out / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out / name)
        written.append(out / name)
    return written
