"""One indicator per group of a production search system's health, for the monitor page.

Watching one number (recall, typically) is driving by the speedometer alone: each group answers
its own question, and the page shows one representative indicator of each, its trend over the
records that hold it, and its status against the threshold recorded beside it. The groups and
where each indicator comes from are data (:data:`GROUPS`); a record's fields are free-form JSON,
so a source names the words its field name must hold (whole words: "age" is not in "usage").

Status against policy: a source may name the field of the same record that holds its threshold
(the monitor's recall ``floor``; the live thresholds of ``monitor --log``). Without one the
status is "no threshold recorded", never a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from recallwatch.history import MonitorRun
from recallwatch.report.plots import Chart, Series, lines, sparkline

__all__ = ["GROUPS", "Group", "Source", "flatten", "indicator_cards", "live_charts"]

TREND_POINTS = 30
# Settings, not measurements: fields under these never stand for an indicator.
_SETTINGS = frozenset({"thresholds", "policy", "budget", "threshold", "floor"})


@dataclass(frozen=True)
class Source:
    title: str  # what the card calls the figure
    words: tuple[str, ...]  # a field name holding every one of these words
    better: Literal["higher", "lower"]
    limit: tuple[str, ...] | None = None  # path, in the same record, of its threshold


@dataclass(frozen=True)
class Group:
    name: str
    question: str
    sources: tuple[Source, ...]  # the first one found in the records wins
    missing: str  # what records it, shown while nothing has


_LIVE = ("live", "thresholds")
GROUPS: tuple[Group, ...] = (
    Group("quality", "Does it find what it must?",
          (Source("recall@k vs exact search", ("recall",), "higher", ("floor",)),),
          "recallwatch monitor records recall against exact search"),
    Group("speed", "Is it fast enough?",
          (Source("latency p99, real traffic", ("live", "p99"), "lower",
                  (*_LIVE, "max_latency_p99_ms")),
           Source("latency p99", ("p99",), "lower"),
           Source("throughput", ("qps",), "higher")),
          "recallwatch monitor records the probes' latency"),
    Group("resources", "Does it fit?",
          (Source("memory", ("memory",), "lower"), Source("resident memory", ("rss",), "lower"),
           Source("index size", ("bytes",), "lower")),
          "a record with a memory, rss or bytes field"),
    Group("coverage", "How many searches get no useful answer?",
          (Source("coverage", ("coverage",), "higher"),
           Source("no-result rate, real traffic", ("live", "no", "result", "rate"), "lower",
                  (*_LIVE, "max_no_result_rate"))),
          "recallwatch calibrate-threshold, then recallwatch monitor"),
    Group("index health", "Has the index degraded?",
          (Source("index age", ("age",), "lower"),),
          "recallwatch monitor on a store with an ANN index"),
    Group("user signals", "Do users find it useful?",
          (Source("click-through rate", ("live", "ctr"), "higher", (*_LIVE, "min_ctr")),
           Source("abandonment", ("live", "abandonment"), "lower",
                  (*_LIVE, "max_abandonment"))),
          "no interaction log monitored yet (recallwatch monitor --log LOG)"),
    Group("cost", "Is it sustainable?",
          (Source("cost", ("cost",), "lower"),),
          "a record with a cost field (e.g. cost per query)"),
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


def indicator_cards(records: list[MonitorRun]) -> list[dict[str, Any]]:
    """One card per group from the operations records (newest first): the latest value of its
    first source found, the status against the threshold beside it, and its trend over the last
    records of the same kind that hold the field."""
    cards = []
    for group in GROUPS:
        card: dict[str, Any] = {"group": group.name, "question": group.question,
                                "value": None, "missing": group.missing}
        for source in group.sources:
            latest = next(((m, f) for m in records if (f := _field(m.payload, source))), None)
            if latest is None:
                continue
            m, (name, value) = latest
            limit = _at(m.payload, source.limit)
            points = [(r, v) for r in reversed(records) if r.kind == m.kind
                      for n, v in flatten(r.payload) if n == name and numeric(v) is not None]
            points = points[-TREND_POINTS:]
            trend: Chart = sparkline(
                f"{source.title}: trend", [float(v) for _, v in points],
                [f"{r.created_at}: {float(v):.4g}" for r, v in points], limit=limit)
            card.update(title=source.title, field=name, value=value, kind=m.kind,
                        at=m.created_at, limit=limit, better=source.better,
                        status=_status(value, limit, source.better), trend=trend,
                        points=len(points))
            break
        cards.append(card)
    return cards


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
    ticks = [(float(i), m.created_at[5:16].replace("T", " ")) for i, m in enumerate(runs)]
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
