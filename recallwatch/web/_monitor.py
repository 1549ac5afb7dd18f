"""The monitor page, one section per store: its health cards (one per group, each naming the
store), the gate's latest task quality on it, its data drift over time with the alarm threshold,
its own timeline of events, its figures over time, and the values that never changed shown as
values, not as flat charts.

Every number carries its unit (:func:`recallwatch.web._indicators.shown`). Records that name no
store are gathered in a section of their own, said as such: two stores are never mixed in one
card, chart or table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recallwatch.history import History, MonitorRun, RunSummary
from recallwatch.ops.budget import BudgetStatus
from recallwatch.report.plots import Chart, Series, lines, time_ticks
from recallwatch.web._indicators import (
    axis_label,
    flatten,
    gate_cost_records,
    indicator_cards,
    live_charts,
    numeric,
    shown,
    unit_of,
    words,
)

__all__ = ["NO_STORE", "drift_charts", "monitor_view", "timeline"]

MAX_FIELD_CHARTS = 8
RECORDS_READ = 2000
GATE_SUMMARIES_READ = 2000
NO_STORE = "records that name no store"


def _ticks(rows: list[MonitorRun]) -> list[tuple[float, str]]:
    # "11-30 17:10": several runs a day are common (seconds when two share a minute)
    return time_ticks([r.created_at for r in rows])


# -- the error budget -------------------------------------------------------------------------


def _budget_status(payload: Mapping[str, Any]) -> BudgetStatus | None:
    """The error-budget status a record holds under a field named with the word "budget"."""
    for key, value in payload.items():
        if not isinstance(value, Mapping):
            continue
        if "budget" in words(key):
            try:
                return BudgetStatus.from_dict(value)
            except (KeyError, TypeError, ValueError):
                pass  # another kind of budget figure: keep looking
        found = _budget_status(value)
        if found is not None:
            return found
    return None


def _budget(records: list[MonitorRun]) -> dict[str, Any] | None:
    """The latest error budget recorded (records newest first)."""
    for m in records:
        status = _budget_status(m.payload)
        if status is not None:
            return {"status": status, "kind": m.kind, "at": m.created_at,
                    "consumed_text": status.explain_consumed(),
                    "burn_rate_text": status.explain_burn_rate()}
    return None


# -- the timeline -----------------------------------------------------------------------------

# Records that change which index serves, or that say why it did not change.
_EVENT_KINDS = ("reindex", "rollback", "promote")


def _event(m: MonitorRun) -> dict[str, Any] | None:
    """One line of the operations timeline, or None for a record that is not an event."""
    p = m.payload
    if m.kind == "reindex":
        auto = p.get("auto") or {}
        who = f"automatic ({auto.get('trigger')}: {auto.get('why')})" if auto else "by hand"
        return {"at": m.created_at, "kind": "reindex", "status": m.status,
                "text": f"reindex {who}: {p.get('reason', '')}"}
    if m.kind in _EVENT_KINDS:
        return {"at": m.created_at, "kind": m.kind, "status": m.status,
                "text": f"{m.kind} → version {m.index_version or p.get('version', '?')}"}
    loop = p.get("reindex") if m.kind == "monitor" else None
    if isinstance(loop, Mapping) and loop.get("result") is None and loop.get("skipped"):
        return {"at": m.created_at, "kind": "reindex", "status": "skipped",
                "text": f"automatic reindex ({loop.get('why')}) skipped: {loop['skipped']}"}
    return None


def timeline(records: list[MonitorRun]) -> list[dict[str, Any]]:
    """The operations events (reindex switched, refused or skipped, rollback, promotion), newest
    first: what changed which index serves, beside the monitor's measurements."""
    return [e for e in map(_event, records) if e is not None]


# -- data drift over time ---------------------------------------------------------------------


def drift_charts(records: list[MonitorRun]) -> list[Chart]:
    """The data-drift test of each monitor run of one store over time (records newest first):
    the p-value with the alarm threshold ``drift_alarm_p`` of the latest run drawn as a rule,
    and the mean-embedding cosine distance; none when no run measured drift."""
    runs = [m for m in reversed(records)
            if m.kind == "monitor" and isinstance(m.payload.get("drift"), Mapping)][-200:]
    if not runs:
        return []
    ticks = _ticks(runs)

    def series(label: str, path: tuple[str, ...], fmt: str) -> Series:
        pts = []
        for i, m in enumerate(runs):
            node: Any = m.payload["drift"]
            for key in path:
                node = node.get(key) if isinstance(node, Mapping) else None
            if (v := numeric(node)) is not None:
                pts.append((float(i), v, f"{m.created_at}: {fmt.format(v)}"))
        return Series(label, [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts])

    thresholds = runs[-1].payload.get("thresholds")
    alarm_p = numeric(thresholds.get("drift_alarm_p")) if isinstance(thresholds, Mapping) \
        else None
    p_values = series("p-value", ("test", "p_value"), "p = {:.4f}")
    charts = []
    if p_values.x:
        charts.append(lines(
            "Data drift: two-sample test p-value (MMD², permutations)", [p_values],
            x_ticks=ticks, y_label="p-value (0–1)", y_range=(0.0, 1.0),
            floor=None if alarm_p is None else (alarm_p, f"alarm under p = {alarm_p:g}")))
    charts.append(lines(
        "Data drift: mean-embedding cosine distance, new rows vs trained rows",
        [series("cosine distance", ("mean_cosine_distance",), "{:.4f}")], x_ticks=ticks,
        y_label="cosine distance (0–2)"))
    return charts


# -- one store --------------------------------------------------------------------------------


def _task_quality(store: str | None, runs: list[RunSummary]) -> dict[str, Any]:
    """The gate's latest verdict and mean quality on ``store`` (runs newest first)."""
    latest = next((r for r in runs if r.store_uri == store), None) if store else None
    if latest is None:
        return {"value": None, "missing": "no gate run on this store recorded (recallwatch gate "
                "--store … --history records its verdict and mean quality)"}
    return {"value": latest.mean_quality, "shown": f"{latest.mean_quality:.1f} / 100",
            "verdict": latest.verdict, "run_id": latest.run_id, "at": latest.created_at,
            "dataset": latest.dataset_name, "recall": shown(latest.mean_recall, "share"),
            "failed": latest.failed_queries, "queries": latest.n_queries}


def _kind_section(kind: str, rows: list[MonitorRun]) -> dict[str, Any]:
    """One kind of record of one store (rows oldest first): a chart for each numeric field that
    changed, the fields that never changed as values, and the newest records."""
    fields: dict[str, list[tuple[float, float, str]]] = {}
    for i, m in enumerate(rows):
        for name, value in flatten(m.payload):
            v = numeric(value)
            if v is not None:
                fields.setdefault(name, []).append((float(i), v, m.created_at))
    ticks = _ticks(rows)
    changing = {n: pts for n, pts in fields.items() if len({p[1] for p in pts}) > 1}
    steady = [(n, shown(pts[0][1], unit_of(n)), len(pts)) for n, pts in fields.items()
              if n not in changing]
    charts = []
    for name, pts in list(changing.items())[:MAX_FIELD_CHARTS]:
        unit = unit_of(name)
        charts.append(lines(
            f"{name} ({axis_label(unit) or 'no unit recorded'})",
            [Series(name, [p[0] for p in pts], [p[1] for p in pts],
                    [f"{p[2]}: {shown(p[1], unit)}" for p in pts])],
            x_ticks=ticks, y_label=axis_label(unit)))
    latest = [{"m": m, "fields": [(n, shown(v, unit_of(n)) if numeric(v) is not None else v)
                                  for n, v in flatten(m.payload)]}
              for m in reversed(rows[-50:])]
    return {"kind": kind, "n": len(rows), "charts": charts, "steady": steady,
            "latest": latest, "more_fields": max(0, len(changing) - MAX_FIELD_CHARTS)}


def _store_section(store: str | None, records: list[MonitorRun], gate: list[MonitorRun],
                   runs: list[RunSummary]) -> dict[str, Any]:
    kinds: dict[str, list[MonitorRun]] = {}
    for m in reversed(records):  # oldest first within a kind
        kinds.setdefault(m.kind, []).append(m)
    versions = [m.index_version for m in records if m.index_version]
    return {
        "store": store, "name": store if store is not None else NO_STORE,
        "version": versions[0] if versions else None, "n": len(records),
        "indicators": indicator_cards(records, gate),
        "quality": _task_quality(store, runs),
        "budget": _budget(records),
        "drift": drift_charts(records),
        "live": live_charts(records),
        "events": timeline(records)[:50],
        "kinds": [_kind_section(k, rows) for k, rows in sorted(kinds.items())],
    }


def monitor_view(h: History) -> dict[str, Any]:
    """The operations records, one section per store (newest record first): health cards with
    trend and status, the gate's task quality, drift over time, the store's own timeline, its
    figures over time and its steady values."""
    records = h.monitor_runs(limit=RECORDS_READ)
    gate = gate_cost_records(h)
    runs = [r for r in h.runs(limit=GATE_SUMMARIES_READ) if r.store_uri is not None]
    stores: list[str | None] = list(dict.fromkeys(
        [m.store_uri for m in records] + [r.store_uri for r in runs]))
    # the stores with the newest records first; records naming no store last
    stores.sort(key=lambda s: s is None)
    sections = [_store_section(s, [m for m in records if m.store_uri == s],
                               [g for g in gate if g.store_uri == s], runs) for s in stores]
    return {"stores": sections, "n": len(records)}
