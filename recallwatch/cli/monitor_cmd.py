"""``recallwatch probes`` (build a probe set) and ``recallwatch monitor`` (measure the live
index with it).

Exit codes: 0 healthy / written, 1 alarm (monitor), 2 usage or input error.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recallwatch.cli._common import emit, emit_json, open_store, recording_history
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    Depth,
    GoldenOption,
    HistoryPath,
    NoHistory,
    ProbesFile,
    RecallFloor,
    Seed,
    StoreURI,
    TableJson,
    TableJsonFormat,
)

if TYPE_CHECKING:
    from recallwatch.ops.monitor import MonitorReport


def _duration(seconds: float) -> str:
    minutes, sec = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {minutes}m" if hours else f"{minutes}m {sec}s"


def _monitor_text(r: MonitorReport) -> str:
    p = r.probes
    lines = [f"monitor {r.store} (version {r.index_version}) — probes {p['name']} v{p['version']} "
             f"({p['size']} {p['kind']}, #{p['hash'][:12]})",
             f"  recall@{r.k} vs exact  {r.recall:.3f} (floor {r.floor:g}; worst probe "
             f"{r.recall_min:.2f}; {r.probes_below_floor} probes below the floor)",
             f"  latency            p50 {r.latency_ms['p50']:.2f} ms, p99 "
             f"{r.latency_ms['p99']:.2f} ms (live search, one probe per call)"]
    if r.coverage is not None:
        lines.append(f"  coverage           {r.coverage:.1%} of probes with a result ≥ "
                     f"{r.threshold:.4f} (the calibrated no-result threshold)")
    if r.index is not None:
        age = "unknown" if r.index_age_seconds is None else _duration(r.index_age_seconds)
        lines.append(f"  index              age {age} ({r.index.get('kind')} "
                     f"{r.index.get('built_at') or ''}); trained on version "
                     f"{r.index.get('trained_version')}")
    d = r.drift
    if d is not None:
        lines.append(f"  data drift         {d.new_rows} rows since version {d.trained_version}: "
                     f"mean-embedding distance {d.mean_cosine_distance:.3f}; "
                     f"{d.share_far:.0%} far from every centroid (trained rows: "
                     f"{d.baseline_share_far:.0%}; centroids: {d.centroids})")
    elif r.index is not None:
        lines.append("  data drift         no rows written since the index was trained")
    if r.budget is not None:
        lines.append(f"  {r.budget.summary()}")
    lines.extend(f"  note: {n}" for n in r.notes)
    lines.extend(f"ALARM: {a}" for a in r.alarms)
    if not r.alarms:
        lines.append("OK")
    return "\n".join(lines)


def probes(
    out: Annotated[Path, typer.Argument(help="Probe-set file to write (JSON).")],
    golden: GoldenOption = None,
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="Logged queries (.txt one per line, or .jsonl with a text "
        "field).")] = None,
    sample: Annotated[int | None, typer.Option(
        "--sample", help="Draw this many logged queries.")] = None,
    seed: Seed = 0,
    name: Annotated[str, typer.Option("--name", help="Probe-set name.")] = "probes",
    version: Annotated[str, typer.Option("--version", help="Probe-set version.")] = "1",
) -> None:
    """Build a versioned probe set from the queries of a golden set (--golden) and/or a random
    sample of logged queries (--queries, --sample, drawn with --seed)."""
    from recallwatch.formats.golden import load_golden
    from recallwatch.ops.probes import build_probes, read_logged_queries, write_probes

    built = build_probes(golden=None if golden is None else load_golden(golden),
                         logged=[] if queries is None else read_logged_queries(queries),
                         sample=sample, seed=seed, name=name, version=version)
    write_probes(built, out)
    emit(f"wrote {out}: {len(built)} probes, {name} v{version}, hash {built.hash}")


def monitor(
    store: StoreURI,
    probes_file: ProbesFile,
    k: Depth = 10,
    floor: RecallFloor = 0.95,
    history: HistoryPath = DEFAULT_HISTORY,
    no_history: NoHistory = False,
    webhook: Annotated[str | None, typer.Option(
        "--webhook", help="POST the report as JSON here when the monitor alarms.")] = None,
    budget_target: Annotated[float | None, typer.Option(
        "--budget-target", help="Error-budget objective: recall@k ≥ this (default: "
        "--floor).")] = None,
    budget_slo: Annotated[float, typer.Option(
        "--budget-slo", help="Share of runs in the window that must meet the "
        "objective.")] = 0.90,
    budget_window: Annotated[int | None, typer.Option(
        "--budget-window", help="Window: the last N monitor runs (default 30).")] = None,
    budget_days: Annotated[float | None, typer.Option(
        "--budget-days", help="Window: the last D days, instead of --budget-window.")] = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Recall of the live index vs exact search, latency, coverage, index age, data drift and
    the error budget. Exit 1 (and the webhook) on an alarm, e.g. recall below --floor."""
    from recallwatch.ops.budget import BudgetPolicy
    from recallwatch.ops.monitor import run_monitor
    from recallwatch.ops.probes import load_probes
    from recallwatch.ops.webhook import post_webhook

    window = budget_window if budget_window is not None or budget_days is not None else 30
    policy = BudgetPolicy(target=floor if budget_target is None else budget_target,
                          slo=budget_slo, window_runs=window, window_days=budget_days)
    probe_set = load_probes(probes_file)
    vs = open_store(store)
    hist = recording_history(history, no_history)
    try:
        report = run_monitor(vs, probe_set, k=k, floor=floor, budget=policy, history=hist)
    finally:
        vs.close()
        if hist is not None:
            hist.close()
    if fmt is TableJson.json:
        emit_json(report.to_dict())
    else:
        emit(_monitor_text(report))
    if report.alarm and webhook:
        status = post_webhook(webhook, {"event": "recallwatch.monitor.alarm", **report.to_dict()})
        typer.echo(f"webhook: HTTP {status}", err=True)
    raise typer.Exit(1 if report.alarm else 0)


def register(app: typer.Typer) -> None:
    app.command("probes")(probes)
    app.command("monitor")(monitor)
