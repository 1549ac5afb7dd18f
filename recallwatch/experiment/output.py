"""An experiment's files: ``results.json`` (the contract), ``results.md`` (the table for a pull
request) and ``report.html`` (self-contained, with the quality-vs-cost frontier)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallwatch.experiment.runner import ExperimentResult

__all__ = ["TEMPLATES", "answer_rows", "frontier", "frontier_chart", "table_rows", "to_markdown",
           "to_text", "view", "write_outputs"]

TEMPLATES = Path(__file__).parent / "templates"
_HEADER = ["variant", "choice", "verdict", "quality", "recall@K", "nDCG@K", "MRR",
           "fact recall@K", "judged@K", "Δ quality (p)", "win/tie/loss", "Δ nDCG@K (p)",
           "ingest s", "store", "p50 ms", "p99 ms", "dominated by"]
_TEXT_COLUMNS = {0, 1, 2, len(_HEADER) - 1}  # left-aligned; the numbers are right-aligned
# How the report's table lays each column out, to fit a 1280 px window: the name and the words
# columns wrap, a figure with its p-value or interval may put that on a second line, a figure
# never breaks.
_PAIRS = {"Δ quality (p)", "Δ nDCG@K (p)", "p50 ms", "p99 ms"}
_ANSWER_HEADER = ["variant", "generator", "faithfulness", "relevance", "correctness",
                  "hallucination rate", "right", "retrieval", "generation", "both"]
_ANSWER_TEXT = {0, 1}
_KINDS = ["name" if i == 0 else "words" if i in _TEXT_COLUMNS - {2} else
          "pair" if h in _PAIRS else "figure" for i, h in enumerate(_HEADER)]


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


def _ordered(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The variants in the order the choice used (results written before the choice was
    recorded: best mean quality first)."""
    by_name = {v["name"]: v for v in data["variants"]}
    order = (data.get("choice") or {}).get("order")
    if order and set(order) == set(by_name):
        return [by_name[n] for n in order]
    return sorted(data["variants"], key=lambda v: -(v["metrics"]["mean_quality"] or 0.0))


def _latency(cost: Mapping[str, Any]) -> tuple[str, str]:
    """The p50 and p99 cells: the side-by-side timing's p50 with its 95 % interval when there is
    one; a p99 only when enough calls bound it (else —)."""
    from recallwatch.stats import calls_needed

    timed = cost.get("side_by_side")
    if timed:
        p99 = timed.get("p99")
        p50 = timed["p50"]
        return (f"{p50['value']:.1f} [{_num(p50['low'], '.1f')}, {_num(p50['high'], '.1f')}]",
                "—" if p99 is None else _num(p99["value"], ".1f"))
    enough = int(cost.get("latency_queries") or 0) >= calls_needed(0.99)
    return (_num(cost["search_p50_ms"], ".1f"),
            _num(cost["search_p99_ms"], ".1f") if enough else "—")


def table_rows(data: Mapping[str, Any]) -> list[list[str]]:
    """One row per variant of a ``results.json`` record, in the order the choice used."""
    rows = []
    for v in _ordered(data):
        m, cost, tests = v["metrics"], v["cost"], v.get("vs_base") or {}
        is_base = v["name"] == data["base"]
        vs = tests.get("mean_quality")
        delta = _delta(is_base, vs, ".1f")
        ndcg = _delta(is_base, tests.get("mean_ndcg"), ".3f")
        wtl = "—" if vs is None else f"{vs['wins']}/{vs['ties']}/{vs['losses']}"
        name = v["name"] + (" (winner)" if v["name"] == data["winner"] else "")
        p50, p99 = _latency(cost)
        rows.append([name, v.get("choice", ""), v["verdict"], _num(m["mean_quality"], ".1f"),
                     _num(m["mean_recall"], ".3f"), _num(m["mean_ndcg"], ".3f"),
                     _num(m["mrr"], ".3f"), _num(m["mean_fact_recall"], ".3f"),
                     _num(m.get("judged_at_k"), ".2f"), delta, wtl, ndcg,
                     _num(cost["ingest_seconds"], ".1f"), _bytes(cost["store_bytes"]),
                     p50, p99, ", ".join(v.get("dominated_by") or []) or "—"])
    return rows


def answer_rows(data: Mapping[str, Any]) -> list[list[str]]:
    """One row per variant of its answers (none when the plan judged no answers), in the
    order the choice used: the measures (— when the judge is not trusted with one), the answers
    right, and the wrong ones by failure."""
    from recallwatch.experiment.answers import generator_name

    if not data.get("answers"):
        return []
    rows = []
    for v in _ordered(data):
        a = v.get("answers") or {}
        failures = a.get("failures") or {}
        rows.append([v["name"], generator_name(a.get("generator") or {}),
                     _num(a.get("faithfulness"), ".3f"), _num(a.get("relevance"), ".3f"),
                     _num(a.get("correctness"), ".3f"), _num(a.get("hallucination_rate"), ".3f"),
                     f"{a.get('right', 0)}/{a.get('answered', 0)}",
                     *(str(failures.get(k, "—")) for k in ("retrieval", "generation", "both"))])
    return rows


def _answer_legend(data: Mapping[str, Any]) -> str:
    queries = "test" if data["judged_on"] == "test" else "all"
    judge = data["answers"]
    return (f"Answers on the {queries} queries: each variant's generator answered each question "
            "from the variant's top K, and again from its expected chunks alone; the "
            f"{judge['judge']['kind']} judge judged both (its agreement with people is in the "
            "summary). right: answers right "
            "by every trusted measure, of those judged; retrieval, generation, both: the wrong "
            "answers by failure (retrieval: right from the expected chunks alone; generation: "
            "wrong from them too, with every expected chunk retrieved; both: wrong from them "
            f"too, with expected chunks missing). — : a measure the judge is not trusted with. "
            f"{judge['choice_note'][:1].upper()}{judge['choice_note'][1:]}.")


def _aligned(header: list[str], rows: list[list[str]], text_columns: set[int]) -> list[str]:
    """A table for a terminal: aligned columns, every cell made safe to print."""
    from recallwatch.report import visible

    cells = [header, *([visible(c) for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) if i in text_columns else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in cells]


def _markdown_table(header: list[str], rows: list[list[str]], text_columns: set[int]
                    ) -> list[str]:
    from recallwatch.report import md_escape as _md

    return ["| " + " | ".join(header) + " |",
            "|" + "".join("---|" if i in text_columns else "---:|" for i in range(len(header))),
            *("| " + " | ".join(_md(c) for c in row) + " |" for row in rows)]


def _legend(data: Mapping[str, Any]) -> str:
    from recallwatch.stats import calls_needed

    queries = "test" if data["judged_on"] == "test" else "all"
    chosen = "tune" if data.get("chosen_on") == "tune" else "all"
    timed = ((data.get("choice") or {}).get("costs") or {}).get("how") == "interleaved"
    latency = ("p50 ms: search latency timed side by side (the variants interleaved call by "
               "call), with its 95 % interval" if timed else
               "p50 ms: search latency, one call per query, each variant timed while it was "
               "judged, at a different moment from the others: compare them with care")
    return (f"Variants on the {queries} queries, in the order the choice used: those that "
            f"beat the base on the {chosen} queries (best first), then the base, then the "
            f"rest by mean quality, nDCG@K and MRR on the {chosen} queries. choice: what the "
            "choice made of each. Δ: the difference from the base, p its p-value after Holm's "
            "correction across the variants (paired randomization test; * significant at "
            "0.05); win/tie/loss: queries whose quality rose, stayed, fell; judged@K: the "
            "share of the top K that is labelled (an unlabelled result counts as not "
            "relevant); ingest s and store: the dense index build (— for BM25 alone); "
            f"{latency}; p99 ms only over at least {calls_needed(0.99)} calls, the fewest "
            "that bound it (— otherwise); dominated by: the variants at least as good on mean "
            "quality and nDCG@K and not significantly costlier.")


def to_text(result: ExperimentResult) -> str:
    """The tables for a terminal: aligned columns, every cell made safe to print."""
    from recallwatch.report import visible

    data = result.to_dict()
    lines = [_legend(data), "", *_aligned(_HEADER, table_rows(data), _TEXT_COLUMNS)]
    answers = answer_rows(data)
    if answers:
        lines += ["", visible(_answer_legend(data)), "",
                  *_aligned(_ANSWER_HEADER, answers, _ANSWER_TEXT)]
    return "\n".join([*lines, "", *(visible(s) for s in result.summary())])


def to_markdown(result: ExperimentResult) -> str:
    from recallwatch.report import md_escape as _md

    data = result.to_dict()
    lines = [_md(_legend(data)), "", *_markdown_table(_HEADER, table_rows(data), _TEXT_COLUMNS)]
    answers = answer_rows(data)
    if answers:
        lines += ["", _md(_answer_legend(data)), "",
                  *_markdown_table(_ANSWER_HEADER, answers, _ANSWER_TEXT)]
    lines += ["", *(_md(s) for s in result.summary())]
    return "\n".join(lines) + "\n"


def _x_ms(v: Mapping[str, Any]) -> float | None:
    timed = v["cost"].get("side_by_side")
    value = timed["p50"]["value"] if timed else v["cost"].get("search_p50_ms")
    return None if value is None else float(value)


def frontier(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each variant's mean quality and nDCG@K against its p50 search latency, and whether it is
    on the front: no other variant dominates it (``dominated_by`` of results.json; results
    written before it was recorded: none is faster and at least as good)."""
    points: list[dict[str, Any]] = []
    for v in data["variants"]:
        points.append({"name": v["name"], "quality": v["metrics"]["mean_quality"] or 0.0,
                       "ndcg": v["metrics"].get("mean_ndcg"), "p50_ms": _x_ms(v),
                       "dominated_by": list(v.get("dominated_by") or [])})
    recorded = all("dominated_by" in v for v in data["variants"])
    timed = [p for p in points if p["p50_ms"] is not None]
    for p in points:
        if recorded:
            p["frontier"] = not p["dominated_by"]
            continue
        p["frontier"] = p["p50_ms"] is not None and not any(
            q is not p and q["p50_ms"] <= p["p50_ms"] and q["quality"] >= p["quality"]
            and (q["p50_ms"] < p["p50_ms"] or q["quality"] > p["quality"]) for q in timed)
    return points


def frontier_chart(data: Mapping[str, Any]) -> Any:
    """The quality-vs-cost plot of a ``results.json`` record (the report's and the dashboard's)."""
    from recallwatch.report import plots

    points = [p for p in frontier(data) if p["p50_ms"] is not None]
    on = sorted((p for p in points if p["frontier"]), key=lambda p: p["p50_ms"])
    off = [p for p in points if not p["frontier"]]

    def tip(p: dict[str, Any]) -> str:
        by = f", dominated by {', '.join(p['dominated_by'])}" if p["dominated_by"] else ""
        winner = " (winner)" if p["name"] == data["winner"] else ""
        return f"{p['name']}{winner}: quality {p['quality']:.1f}, p50 {p['p50_ms']:.1f} ms{by}"

    # every point named beside it (plots places the names where they overlap nothing)
    series = [plots.Series("on the front", [p["p50_ms"] for p in on],
                           [p["quality"] for p in on], [tip(p) for p in on], line=True,
                           labels=[p["name"] for p in on])]
    if off:
        series.append(plots.Series("dominated", [p["p50_ms"] for p in off],
                                   [p["quality"] for p in off], [tip(p) for p in off],
                                   line=False, labels=[p["name"] for p in off]))
    return plots.scatter("Quality against cost: the variants no other dominates",
                         series, x_label="search latency p50 (ms)",
                         y_label="mean quality (points, 0–100)", connect=True)


def view(data: Mapping[str, Any]) -> dict[str, Any]:
    """What the experiment's page shows (the report's and the dashboard's): the table's header
    and rows (with each column's kind of layout), the summary lines, the plot and its points,
    the winner."""
    answers = answer_rows(data)
    return {"header": _HEADER, "kinds": _KINDS, "rows": table_rows(data), "legend": _legend(data),
            "summary": list(data.get("summary") or []), "chart": frontier_chart(data),
            "points": frontier(data), "winner": data["winner"],
            "answer_header": _ANSWER_HEADER, "answer_rows": answers,
            "answer_legend": _answer_legend(data) if answers else None}


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
