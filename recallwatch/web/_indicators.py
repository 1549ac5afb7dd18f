"""One indicator per group of a production search system's health, for the monitor page.

Watching one number (recall, typically) is driving by the speedometer alone: each group answers
its own question, and the page shows one representative indicator of each, its trend over the
records that hold it, and its status against the threshold recorded beside it. The groups and
where each indicator comes from are data (:data:`GROUPS`); a record's fields are free-form JSON,
so a source names the words its field name must hold (whole words: "age" is not in "usage").

Status against policy: a source may name the field of the same record that holds its threshold
(the monitor's recall ``floor``; the live thresholds of ``monitor --log``), or the recorded
outcome of the policy's caps (a gate run's cost checks). Without one the status is "no threshold
recorded", never a guess.

Most groups read the operations records (``recallwatch ops monitor``, promote, reindex…); the cost
group reads the gate runs first: every gate run on a store records what it cost (search latency,
query embedding time, index bytes) and the outcome of the policy's cost caps
(:func:`gate_cost_records` turns the latest of them into records of the same shape).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from recallwatch.acceptance.cost import format_cost
from recallwatch.history import History, MonitorRun
from recallwatch.report.plots import Chart, Series, lines, sparkline, time_ticks

__all__ = ["GROUPS", "Group", "Source", "flatten", "gate_cost_records", "indicator_cards",
           "live_charts"]

TREND_POINTS = 30
GATE_RUNS_READ = 10  # the newest gate runs on a store loaded for the cost card (full results)
GATE_KIND = "gate run"  # the kind of the records made from gate runs
# Settings, not measurements: fields under these never stand for an indicator.
_SETTINGS = frozenset({"thresholds", "policy", "budget", "threshold", "floor"})


@dataclass(frozen=True)
class Source:
    title: str  # what the card calls the figure
    words: tuple[str, ...]  # a field name holding every one of these words
    better: Literal["higher", "lower"]
    limit: tuple[str, ...] | None = None  # path, in the same record, of its threshold
    # how the value is shown when its field name does not say (unit_of): None, 4 significant
    # digits and the field's own unit
    unit: str | None = None
    origin: Literal["monitor", "gate"] = "monitor"  # which records hold it
    # path, in the same record, of a recorded verdict {"status", "caps"}: the policy's caps as
    # the gate applied them (wins over ``limit``)
    verdict: tuple[str, ...] | None = None
    # an exact path to the value instead of ``words`` (a field that other fields' names also
    # match: the probes' stated p99, ``latency.p99_ms``, beside ``latency_ms.p99``)
    path: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Group:
    name: str
    question: str
    sources: tuple[Source, ...]  # the first one found in the records wins
    missing: str  # what records it, shown while nothing has
    details: tuple[Source, ...] = ()  # further figures of the same record, shown under it


_LIVE = ("live", "thresholds")
GROUPS: tuple[Group, ...] = (
    Group("quality", "Does it find what it must?",
          (Source("recall@k vs exact search", ("recall",), "higher", ("floor",), unit="share"),),
          "recallwatch ops monitor records recall against exact search"),
    Group("speed", "Is it fast enough?",
          (Source("latency p99, real traffic", ("live", "p99"), "lower",
                  (*_LIVE, "max_latency_p99_ms"), unit="ms"),
           # the p99 the monitor states, from the calls its interval needs; else its median
           Source("latency p99 of the probes", ("p99",), "lower",
                  ("thresholds", "max_latency_p99_ms"), unit="ms", path=("latency", "p99_ms"),
                  verdict=("latency",)),
           Source("latency p50 of the probes (too few calls for a p99)", ("p50",), "lower",
                  unit="ms", path=("latency", "p50_ms")),
           # a record written before the monitor kept its latency's evidence
           Source("latency p99 of the probes", ("p99",), "lower",
                  ("thresholds", "max_latency_p99_ms"), unit="ms"),
           Source("throughput", ("qps",), "higher")),
          "recallwatch ops monitor records the probes' latency"),
    Group("resources", "Does it fit?",
          (Source("memory", ("memory",), "lower"), Source("resident memory", ("rss",), "lower"),
           Source("ANN index size", ("index", "bytes"), "lower", unit="bytes"),
           Source("stored vectors (float32)", ("vector", "bytes"), "lower", unit="bytes"),
           Source("size", ("bytes",), "lower", unit="bytes")),
          "recallwatch ops monitor records the store's rows, vector bytes and index bytes",
          (Source("store size", ("resources", "rows"), "lower", unit="rows"),
           Source("stored vectors (float32)", ("vector", "bytes"), "lower", unit="bytes"))),
    Group("coverage", "How many searches get no useful answer?",
          (Source("coverage", ("coverage",), "higher", ("thresholds", "min_coverage"),
                  unit="share"),
           Source("no-result rate, real traffic", ("live", "no", "result", "rate"), "lower",
                  (*_LIVE, "max_no_result_rate"), unit="share")),
          "recallwatch ops calibrate-threshold, then recallwatch ops monitor"),
    Group("index health", "Has the index degraded?",
          (Source("index age", ("age",), "lower"),),
          "recallwatch ops monitor on a store with an ANN index"),
    Group("user signals", "Do users find it useful?",
          (Source("click-through rate", ("live", "ctr"), "higher", (*_LIVE, "min_ctr"),
                  unit="clicks/search"),
           Source("abandonment", ("live", "abandonment"), "lower",
                  (*_LIVE, "max_abandonment"), unit="share")),
          "no interaction log monitored yet (recallwatch ops monitor --log LOG)"),
    Group("cost", "Is it sustainable?",
          (Source("search latency p99 of the gate run", ("cost", "search", "p99"), "lower",
                  ("policy", "max_latency_p99_ms"), unit="ms", origin="gate",
                  verdict=("caps",)),
           # a run that timed too few calls for a p99 states none: its median speaks
           Source("search latency p50 of the gate run", ("cost", "search", "p50"), "lower",
                  unit="ms", origin="gate", verdict=("caps",)),
           Source("cost", ("cost",), "lower")),
          "recallwatch gate --store … --history records each run's cost",
          (Source("query embedding, per query", ("cost", "embed", "query"), "lower",
                  unit="ms"),
           Source("index bytes", ("cost", "index", "bytes"), "lower", unit="bytes"))),
    Group("answers", "Are the assistant's answers right?",
          (Source("hallucination rate of the gate run", ("answers", "hallucination", "rate"),
                  "lower", ("policy", "max_hallucination_rate"), unit="share", origin="gate"),
           Source("faithfulness of the gate run", ("answers", "faithfulness"), "higher",
                  ("policy", "min_faithfulness"), unit="share", origin="gate"),
           Source("answer relevance of the gate run", ("answers", "relevance"), "higher",
                  ("policy", "min_answer_relevance"), unit="share", origin="gate")),
          "recallwatch gate --store … --history with --answers FILE or --generator SPEC "
          "records each run's answer measures",
          (Source("faithfulness", ("answers", "faithfulness"), "higher", unit="share"),
           Source("answer relevance", ("answers", "relevance"), "higher", unit="share"),
           Source("correctness", ("answers", "correctness"), "higher", unit="share"))),
)


def flatten(payload: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Nested payload fields as ``a.b`` names (lists are kept whole)."""
    for key, value in payload.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flatten(value, f"{name}.")
        else:
            yield name, value


def words(name: str) -> list[str]:
    """``error_budget.remaining`` → error, budget, remaining."""
    return re.split(r"[^a-z0-9]+", name.lower())


def numeric(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _field(payload: Mapping[str, Any], source: Source) -> tuple[str, float] | None:
    if source.path is not None:
        value = _at(payload, source.path)
        return None if value is None else (".".join(source.path), value)
    for name, value in flatten(payload):
        w = set(words(name))
        v = numeric(value)
        if v is not None and set(source.words) <= w and not w & _SETTINGS:
            return name, v
    return None


def _at(payload: Mapping[str, Any], path: tuple[str, ...] | None) -> float | None:
    node: Any = payload
    for key in path or ():
        node = node.get(key) if isinstance(node, Mapping) else None
    return numeric(node)


def _status(value: float, limit: float | None, better: str) -> str:
    if limit is None:
        return "no threshold recorded"
    return "ok" if (value >= limit if better == "higher" else value <= limit) else "breach"


# A field name's words that say its unit, and the unit shown (first match wins): named units,
# then the words of counts, then the words of shares (shown as percentages).
_NAMED_UNITS: tuple[tuple[str, str], ...] = (
    ("bytes", "bytes"), ("ms", "ms"), ("seconds", "duration"), ("days", "days"),
    ("hours", "hours"), ("mb", "MB"), ("qps", "queries/s"), ("rows", "rows"), ("burn", "×"),
    ("probes", "probes"), ("dimensions", "dimensions"), ("impressions", "impressions"),
    ("ctr", "clicks/search"),
    ("recall", "share"), ("coverage", "share"), ("share", "share"), ("rate", "share"),
    ("floor", "share"), ("abandonment", "share"), ("precision", "share"),
    ("consumed", "share"),
)


def unit_of(name: str, default: str | None = None) -> str | None:
    """The unit of a record's field: what its name says (``latency.p99_ms`` → ms,
    ``index_age_seconds`` → a duration, ``coverage`` → a share), else ``default``."""
    w = set(words(name))
    return next((unit for word, unit in _NAMED_UNITS if word in w), default)


def axis_label(unit: str | None) -> str:
    """How a chart's value axis names ``unit`` (the values are drawn as recorded)."""
    return {"share": "share (0–1)", "duration": "seconds", "days": "days",
            "hours": "hours"}.get(unit or "", unit or "")


def shown(value: float, unit: str | None) -> str:
    """A value with its unit: ``14.5 ms``, ``87.0%``, ``1.2 MiB``, ``2 d 3 h``, ``1,200 rows``."""
    if unit == "bytes":
        return format_cost("index_bytes", value)
    if unit == "share":
        return f"{value:.1%}"
    if unit in ("duration", "days", "hours"):
        seconds = value * {"duration": 1, "days": 86400, "hours": 3600}[unit]
        return duration(seconds)
    if unit in ("rows", "probes", "dimensions", "impressions"):
        return f"{value:,.0f} {unit}"
    if unit == "×":
        return f"{value:.2f}×"
    return f"{value:.4g}" if unit is None else f"{value:.4g} {unit}"


def duration(seconds: float) -> str:
    """``3 h 20 min``, ``2 d 4 h``, ``45 s``."""
    s = round(seconds)
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, sec = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {sec} s" if minutes else f"{sec} s"


def indicator_cards(records: list[MonitorRun],
                    gate_records: list[MonitorRun] | None = None) -> list[dict[str, Any]]:
    """One card per group from the operations records and the records made of gate runs
    (:func:`gate_cost_records`; both newest first): the latest value of its first source found,
    the status against the threshold beside it, further figures of the same record, and its
    trend over the last records of the same kind that hold the field."""
    by_origin = {"monitor": records, "gate": gate_records or []}
    cards = []
    for group in GROUPS:
        card: dict[str, Any] = {"group": group.name, "question": group.question,
                                "value": None, "missing": group.missing}
        for source in group.sources:
            held = by_origin[source.origin]
            latest = next(((m, f) for m in held if (f := _field(m.payload, source))), None)
            if latest is None:
                continue
            m, (name, value) = latest
            unit = unit_of(name, source.unit)
            limit = _at(m.payload, source.limit)
            status = _status(value, limit, source.better)
            limit_text = (None if limit is None else
                          f"{'min' if source.better == 'higher' else 'max'} "
                          f"{shown(limit, unit)}")
            verdict = _verdict(m.payload, source.verdict)
            if verdict is not None:
                status, limit_text = verdict
            points = [(r, v) for r in reversed(held) if r.kind == m.kind
                      for n, v in flatten(r.payload) if n == name and numeric(v) is not None]
            points = points[-TREND_POINTS:]
            trend: Chart = sparkline(
                f"{source.title}: trend", [float(v) for _, v in points],
                [f"{r.created_at}: {shown(float(v), unit)}" for r, v in points],
                limit=limit)
            details = [(d.title, shown(v, unit_of(f[0], d.unit))) for d in group.details
                       if (f := _field(m.payload, d)) is not None and f[0] != name
                       for v in (f[1],)]
            run_id = m.payload.get("run_id")
            card.update(title=source.title, field=name, value=value,
                        shown=shown(value, unit), kind=m.kind, at=m.created_at,
                        limit=limit, limit_text=limit_text, better=source.better,
                        status=status, trend=trend, points=len(points), details=details,
                        run_id=run_id if isinstance(run_id, str) else None)
            break
        cards.append(card)
    return cards


def _verdict(payload: Mapping[str, Any],
             path: tuple[str, ...] | None) -> tuple[str, str] | None:
    """``(status, caps)`` recorded at ``path``, when the caps were applied."""
    node: Any = payload
    for key in path or ():
        node = node.get(key) if isinstance(node, Mapping) else None
    if not path or not isinstance(node, Mapping) or node.get("status") is None:
        return None
    if "cap_ms" in node:  # the monitor's latency check: the cap judged on the p99's interval
        status = _LATENCY_STATUS.get(str(node["status"]))
        if status is None or not isinstance(node["cap_ms"], int | float):
            return None
        noise = ", within noise" if node["status"] == "within noise" else ""
        return status, f"max {node['cap_ms']:g} ms{noise}"
    return str(node["status"]), str(node.get("caps") or "")


# The monitor's latency check (recallwatch.acceptance.latency_cap) as a card's status: over the
# cap only when the p99's whole interval is; a p99 over it whose interval reaches below is ok.
_LATENCY_STATUS = {"over": "breach", "within": "ok", "within noise": "ok"}


# The gate's checks of the policy's cost caps (recallwatch.acceptance.limits).
_COST_RULES = ("latency_p99", "cost_increase")


# The policy keys a gate record carries: the cost caps, and the answer rules' thresholds.
_RECORDED_POLICY = ("max_latency_p99_ms", "max_cost_increase", "max_hallucination_rate",
                    "min_faithfulness", "min_answer_relevance")


def gate_cost_records(h: History, limit: int = GATE_RUNS_READ) -> list[MonitorRun]:
    """The cost and answer measures of the newest gate runs on a store (newest first), as
    records the cost and answers cards read: ``cost`` as the run recorded it, ``answers`` (the
    means and the hallucination rate, when it judged answers), the policy's caps and answer
    thresholds, and ``caps``: the outcome of the cost checks the gate applied ("breach" when one
    stopped the run, "ok" when all applied ones passed; absent when the policy capped nothing or
    no baseline allowed the comparison)."""
    out = []
    for summary in h.runs(limit=limit * 5):
        if summary.store_uri is None:  # a results file: no timings, no cost
            continue
        run = h.load(summary.run_id)
        if run.cost is None and not summary.has_answers:
            continue
        policy = {k: run.policy[k] for k in _RECORDED_POLICY if run.policy.get(k) is not None}
        checks = [c for c in run.checks if c.rule in _COST_RULES
                  and c.status in ("pass", "stop")]
        # the figures, without the per-call timings they were computed from
        cost = {k: v for k, v in (run.cost or {}).items() if k not in ("samples", "baseline")}
        payload: dict[str, Any] = {"run_id": run.run_id, "cost": cost, "policy": policy}
        if summary.has_answers:
            payload["answers"] = {"faithfulness": summary.faithfulness,
                                  "relevance": summary.answer_relevance,
                                  "correctness": summary.correctness,
                                  "hallucination_rate": summary.hallucination_rate}
        if checks:
            caps = [f"max_latency_p99_ms {policy['max_latency_p99_ms']:g}"
                    if "max_latency_p99_ms" in policy else "",
                    f"max_cost_increase {policy['max_cost_increase']:.0%}"
                    if "max_cost_increase" in policy else ""]
            payload["caps"] = {
                "status": "breach" if any(c.status == "stop" for c in checks) else "ok",
                "caps": " · ".join(c for c in caps if c),
                "stopped": [c.message for c in checks if c.status == "stop"]}
        out.append(MonitorRun(id=summary.seq, kind=GATE_KIND, created_at=summary.created_at,
                              store_uri=summary.store_uri, index_version=summary.index_version,
                              status=summary.verdict, payload=payload))
        if len(out) == limit:
            break
    return out


# (title, the live signals drawn, the threshold drawn as a rule)
_LIVE_CHARTS: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...], str | None], ...] = (
    ("Real traffic: no-result rate and abandonment (share of searches)",
     (("no-result rate", ("no_result_rate",)), ("abandonment", ("abandonment",))),
     "max_no_result_rate"),
    ("Real traffic: click-through rate (clicked results per search)",
     (("click-through rate", ("ctr",)),), "min_ctr"),
    ("Real traffic: latency (ms)",
     (("p50", ("latency_ms", "p50")), ("p95", ("latency_ms", "p95")),
      ("p99", ("latency_ms", "p99"))), "max_latency_p99_ms"),
)


def live_charts(records: list[MonitorRun]) -> list[Chart]:
    """The live signals of ``monitor --log`` runs (records newest first) over time, with the
    latest run's threshold; none when no run read a log."""
    runs = [m for m in reversed(records) if isinstance(m.payload.get("live"), Mapping)]
    if not runs:
        return []
    runs = runs[-200:]
    ticks = time_ticks([m.created_at for m in runs])
    latest = runs[-1].payload["live"].get("thresholds") or {}
    charts = []
    for title, signals, bound in _LIVE_CHARTS:
        series = []
        for label, path in signals:
            pts = [(float(i), v) for i, m in enumerate(runs)
                   if (v := _at(m.payload["live"], path)) is not None]
            series.append(Series(label, [p[0] for p in pts], [p[1] for p in pts],
                                 [f"{runs[int(p[0])].created_at}: {p[1]:.4g}" for p in pts]))
        limit = numeric(latest.get(bound)) if bound else None
        charts.append(lines(title, series, x_ticks=ticks,
                            floor=None if limit is None else (limit, f"{bound} {limit:g}")))
    return charts
