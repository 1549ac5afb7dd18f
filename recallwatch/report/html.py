"""The HTML report: one self-contained file (inline CSS, JS and SVG plots) that opens offline.

The dashboard (``recallwatch.web``) renders a run with the same templates, so a run looks the
same in a file attached to a CI job and on ``recallwatch ops serve``.

Safety: every template is rendered with autoescape on; user strings reach JavaScript only as a
JSON data island (:func:`json_script`), never concatenated into markup or code.

Speed: what does not depend on the run is done once. The templates compiled to Python code are
kept in recallwatch's user cache (``templates``, :mod:`recallwatch._usercache`; Jinja's bytecode
cache, keyed by each template's source, so an edited template is compiled afresh), the static
CSS and JS are read once per process, and the CSP hash of the script computed once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from recallwatch._usercache import user_cache
from recallwatch._version import __version__
from recallwatch.acceptance.cost import cost_line
from recallwatch.acceptance.freshness import freshness_line
from recallwatch.acceptance.model import CAUSE_ORDER, GateResult, QueryResult
from recallwatch.acceptance.money import money_lines
from recallwatch.acceptance.score import SCORE_TOLERANCE
from recallwatch.report._answers import (
    FAILURE_WORDS,
    answer_figures,
    answer_lines,
    answer_status,
    answers_line,
    judge_line,
    statement_note,
    wrong_answers,
)
from recallwatch.report._text import alternatives_line, anchor_line, twin_line, visible
from recallwatch.report.plots import Chart, bars, fit, hbars

__all__ = ["content_security_policy", "environment", "json_script", "render", "run_view", "to_html"]

_HERE = Path(__file__).resolve().parent
TEMPLATES = _HERE / "templates"
STATIC = _HERE / "static"

# What JSON needs escaped to be inert inside <script>: "</script>", "<!--" and U+2028/9 (legal
# in JSON, line breaks in older JS). Escaping every <, > and & covers the first two whatever
# the case or spacing.
_JSON_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                        0x2028: "\\u2028", 0x2029: "\\u2029"}


def json_script(value: Any, element_id: str) -> Markup:
    """``value`` as a ``<script type="application/json">`` element, inert whatever it holds."""
    data = json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    for char, escaped in _JSON_SCRIPT_ESCAPES.items():  # str.replace: at memory speed
        data = data.replace(chr(char), escaped)
    safe_id = Markup.escape(element_id)
    return Markup(f'<script type="application/json" id="{safe_id}">{data}</script>')


def _path_segment(value: object) -> str:
    """A URL path segment for any user string ('/' and '?' included)."""
    return quote(str(value), safe="")


def _num(value: object, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def _pretty(value: object) -> str:
    """JSON for people (indented, non-ASCII kept); autoescaped where it is shown."""
    return visible(json.dumps(value, indent=2, ensure_ascii=False, default=str))


# The diagnosis evidence's field names, in words (a field not listed: its name, "_" as spaces).
EVIDENCE_LABELS: dict[str, str] = {
    "rank": "rank in the deep search",
    "score": "score",
    "kth_score": "score of the K-th result",
    "gap_to_kth": "gap to the K-th result",
    "outranked_by": "outranked by",
    "findings": "findings",
    "also": "other causes that also fit",
    "chunking": "chunking",
    "description": "missing description",
    "labelling": "labelling",
    "embedding": "embedding",
    "noise": "noise (results under the worst expected chunk)",
    "allowed": "noise allowed",
    "threshold": "noise threshold (score)",
    "below_threshold": "results under the threshold",
    "unjudged": "results nobody judged",
    "labels_sparse": "labels too sparse to measure noise",
    "acl": "groups that may see the chunk",
    "groups": "the asking user's groups",
}


def evidence_label(key: object) -> str:
    """A diagnosis evidence field as people read it (``gap_to_kth`` → "gap to the K-th
    result")."""
    return EVIDENCE_LABELS.get(str(key), visible(key).replace("_", " "))


def chunk_figures(item: dict[str, Any]) -> str:
    """What the evidence says of a chunk besides its id: " — score 0.8123, rank 4"."""
    parts = []
    if item.get("score") is not None:
        parts.append(f"score {_num(item['score'], 4)}")
    if item.get("rank") is not None:
        parts.append(f"rank {item['rank']}")
    return f" — {', '.join(parts)}" if parts else ""


def summary_after_id(summary: str, chunk_id: str) -> str:
    """A diagnosis summary that opens with its chunk's id, without it (the id is shown just
    before it): "c7 (at rank 12): table whose …" → "At rank 12: table whose …"."""
    if not summary.startswith(chunk_id):
        return summary
    rest = summary[len(chunk_id):].lstrip()
    if rest.startswith("(") and "): " in rest:
        inside, after = rest[1:].split("): ", 1)
        rest = f"{inside}: {after}"
    rest = rest.lstrip(":; ")
    return rest[:1].upper() + rest[1:] if rest else summary


@lru_cache(maxsize=4)
def environment(*extra: Path) -> jinja2.Environment:
    """The Jinja environment: the report's templates, plus ``extra`` directories searched first
    (the dashboard's pages). Autoescape on for every template, undefined names are errors."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*(str(p) for p in extra), str(TEMPLATES)]),
        bytecode_cache=_compiled_templates(),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["seg"] = _path_segment
    env.filters["visible"] = visible
    env.filters["pretty"] = _pretty
    env.globals["cost_line"] = cost_line
    env.globals["freshness_line"] = freshness_line
    env.globals["money_lines"] = money_lines
    env.globals.update(answers_line=answers_line, judge_line=judge_line,
                       answer_lines=answer_lines, answer_status=answer_status,
                       answer_figures=answer_figures, statement_note=statement_note,
                       wrong_answers=wrong_answers,
                       failure_words=FAILURE_WORDS)
    env.globals["json_script"] = json_script
    env.globals["inline_css"] = Markup((STATIC / "report.css").read_text(encoding="utf-8"))
    script = (STATIC / "report.js").read_text(encoding="utf-8")
    env.globals["inline_js"] = Markup(script)
    env.globals["csp"] = content_security_policy(script)
    env.globals["version"] = __version__
    env.globals["cause_order"] = CAUSE_ORDER
    env.globals["anchor_line"] = anchor_line
    env.globals["alternatives_line"] = alternatives_line
    env.globals["twin_line"] = twin_line
    env.globals["fit"] = fit
    env.globals["evidence_label"] = evidence_label
    env.globals["chunk_figures"] = chunk_figures
    env.globals["summary_after_id"] = summary_after_id
    env.globals["gold_title"] = ("expects a Gold chunk: a curated synthesis the team wrote, which "
                                 "must never be missed")
    return env


class _BytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's bytecode cache in a directory of recallwatch's user cache, best effort: a cache
    that cannot be read or written (read-only, full, an unreadable entry) costs a compilation,
    never a report."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # a damaged or foreign entry: compiled afresh, and replaced
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _compiled_templates() -> jinja2.BytecodeCache | None:
    """Where compiled templates are kept between runs; None when recallwatch's caches are off
    (``RECALLWATCH_CACHE=0``)."""
    directory = user_cache("templates")
    return None if directory is None else _BytecodeCache(str(directory))


def content_security_policy(script: str) -> str:
    """Only our own inline script may run (allowed by its hash: no injected script or event
    handler can); styles inline, images only as data: URLs, nothing fetched from anywhere."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "img-src data:; base-uri 'none'; form-action 'self'")


# -- the view of one run ---------------------------------------------------------------------------


def _query_view(q: QueryResult, index: int, comparison: dict[str, Any] | None) -> dict[str, Any]:
    threshold = q.noise_threshold
    expected = {h.id: h for h in q.expected}
    scores = [s for _, s in q.top] + ([threshold] if threshold is not None else [])
    lo, hi = (min(scores), max(scores)) if scores else (0.0, 1.0)
    span = hi - lo or 1.0
    top = []
    threshold_at = None  # the row the threshold line is drawn above
    for rank, (cid, score) in enumerate(q.top, start=1):
        below = threshold is not None and score < threshold - SCORE_TOLERANCE
        if below and threshold_at is None:
            threshold_at = rank
        hit = expected.get(cid)
        top.append({"rank": rank, "id": cid, "score": score, "expected": hit is not None,
                    "gold": bool(hit and hit.gold), "noise": below,
                    # bar length: 8–100 % of the cell, on the range of scores shown
                    "bar": round(8 + 92 * (score - lo) / span, 1)})
    ranks = [h.rank for h in q.expected]
    worst = None if any(r is None for r in ranks) else max((r for r in ranks if r), default=None)
    changes = {}
    for key in ("previous", "last_accepted"):
        c = (comparison or {}).get(key)
        if not c or not c.get("comparable", True):
            continue
        changes[key] = {
            "run_id": c.get("run_id"),
            "ranks": (c.get("rank_changes") or {}).get(q.id, {}),
            "buried_by": (c.get("buried_by") or {}).get(q.id, []),
            "entered": (c.get("entered_top_k") or {}).get(q.id, []),
            "newly_failing": q.id in (c.get("newly_failing") or []),
            "newly_passing": q.id in (c.get("newly_passing") or []),
        }
    return {"q": q, "anchor": f"q-{index}", "top": top, "threshold_at": threshold_at,
            "below_all": threshold_at is None and threshold is not None and bool(q.top)
            and q.top[-1][1] >= threshold - SCORE_TOLERANCE,
            "missing": [h for h in q.expected if not h.in_top_k],
            "worst_rank": worst, "changes": changes}


def _quality_chart(result: GateResult) -> Chart:
    labels = [f"{10 * i}–{10 * i + 9}" for i in range(10)] + ["100"]
    passed, failed = [0.0] * 11, [0.0] * 11
    for q in result.queries:
        b = 10 if q.quality >= 100 else max(0, min(9, int(q.quality // 10)))
        (passed if q.passed else failed)[b] += 1
    chart = bars("Quality score per query", labels, [("good", passed), ("bad", failed)],
                        x_label="quality score (points, 0–100)", y_label="queries (count)")
    return _with_legend(chart, (("good", "passing"), ("bad", "failing")))


def _with_legend(chart: Chart, legend: tuple[tuple[str, str], ...]) -> Chart:
    return chart if chart.empty else replace(chart, legend=legend)


def _domain_chart(result: GateResult) -> Chart:
    per = result.aggregate.per_domain
    names = sorted(per)
    floor = float(result.policy.get("recall_floor", 0.9))
    return hbars(
        "Mean recall by domain", names, [float(per[d]["mean_recall"]) for d in names],
        x_label="mean recall@K (share found, 0–1)", floor=(floor, f"recall floor {floor:g}"),
        bad_below=floor,
        tips=[f"{int(per[d].get('n', 0))} queries, {int(per[d].get('failed', 0))} failing, "
              f"mean quality {float(per[d].get('mean_quality', 0)):.1f}" for d in names],
    )


def _rank_chart(result: GateResult) -> Chart:
    """Where the expected chunks landed: ranks 1..K, then beyond K in buckets, then not found."""
    k = max((q.top_k for q in result.queries), default=10)
    counts: Counter[tuple[str, bool]] = Counter()
    beyond = [(2 * k, f"{k + 1}–{2 * k}"), (5 * k, f"{2 * k + 1}–{5 * k}")]
    labels = [str(r) for r in range(1, k + 1)] + [lab for _, lab in beyond] + \
        [f">{5 * k}", "not found"]
    for q in result.queries:
        for h in q.expected:
            if h.rank is None:
                label = "not found"
            elif h.rank <= k:
                label = str(h.rank)
            else:
                label = next((lab for top, lab in beyond if h.rank <= top), f">{5 * k}")
            counts[(label, h.gold)] += 1
    chart = bars(
        "Ranks of the expected chunks", labels,
        [("c0", [counts[(lab, False)] for lab in labels]),
         ("gold", [counts[(lab, True)] for lab in labels])],
        x_label="rank in the deep search (position)", y_label="expected chunks (count)",
        marker=(k, f"K = {k}"),
    )
    return _with_legend(chart, (("c0", "expected"), ("gold", "Gold")))


def run_view(result: GateResult, *, link_base: str | None = None) -> dict[str, Any]:
    """Everything ``_run.html`` shows of a run. ``link_base``: the dashboard's URL of the run
    (query pages are linked under it); None in the self-contained report."""
    comparison = result.comparison
    queries = [_query_view(q, i, comparison) for i, q in enumerate(result.queries)]
    anchors = {v["q"].id: v["anchor"] for v in queries}
    blocks = []
    for label, key in (("previous run", "previous"), ("last accepted run", "last_accepted")):
        blocks.append({"label": label, "c": (comparison or {}).get(key)})
    return {
        "result": result,
        "a": result.aggregate,
        "queries": queries,
        "anchors": anchors,
        "domains": sorted({q.domain for q in result.queries if q.domain}),
        "comparison": blocks if comparison is not None else [],
        "charts": [_quality_chart(result), _domain_chart(result), _rank_chart(result)],
        "link_base": link_base,
    }


def to_html(result: GateResult) -> str:
    """The self-contained report of one gate run."""
    return environment().get_template("report.html").render(
        run=run_view(result), data=result.to_dict(),
        title=f"recallwatch {result.verdict} — {result.dataset.get('name', '')}",
    )


def render(template: str, extra: Sequence[Path] = (), **context: Any) -> str:
    """Render any template of the report (and ``extra`` directories) with the shared filters."""
    return environment(*extra).get_template(template).render(**context)
