"""``recallwatch ops probes`` (build a probe set) and ``recallwatch ops monitor`` (measure the live
index with it).

Exit codes: 0 healthy / written, 1 alarm (monitor), 2 usage or input error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recallwatch.cli._common import emit, emit_json, open_store, recording_history
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    Depth,
    EngineChoice,
    EngineOption,
    GoldenOption,
    HistoryPath,
    MaxRecallLoss,
    MinCoverage,
    NoHistory,
    PipelineFile,
    PolicyFile,
    ProbesFile,
    RayAddress,
    RayWorkers,
    RecallFloor,
    ReindexWindowHours,
    Seed,
    StoreURIOrNone,
    TableJson,
    TableJsonFormat,
)
from recallwatch.cli.ops._pipeline import latency_text

if TYPE_CHECKING:
    from recallwatch.history import History
    from recallwatch.online.live import LiveLog
    from recallwatch.ops.budget import BudgetPolicy
    from recallwatch.ops.live_signals import LiveCheck
    from recallwatch.ops.monitor import MonitorReport, MonitorSettings, ReindexSettings
    from recallwatch.ops.recall import ExactSearch


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
             f"  latency            {latency_text(r.latency_ms, r.latency)} (live search, one "
             "probe per call; "
             + ("no maximum set)" if (cap := r.thresholds.get("max_latency_p99_ms")) is None
                else f"p99 max {cap:g} ms)")]
    if r.coverage is not None:
        least = r.thresholds.get("min_coverage")
        lines.append(f"  coverage           {r.coverage:.1%} of probes with a result ≥ "
                     f"{r.threshold:.4f} (the calibrated no-result threshold"
                     + ("" if not least else f"; min {least:.0%}") + ")")
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
        if d.test is not None:
            t = d.test
            lines.append(f"    two-sample test  MMD² {t.mmd2:.4g}, p-value {t.p_value:.4f} "
                         f"({t.permutations} permutations; {t.reference_rows} trained and "
                         f"{t.current_rows} new rows); dimensions drifted: KS "
                         f"{t.ks_share_drifted:.0%}, PSI {t.psi_share_drifted:.0%}")
    elif r.index is not None:
        lines.append("  data drift         no rows written since the index was trained")
    if r.resources is not None:
        lines.append(_resources_text(r.resources))
    if r.freshness is not None:
        from recallwatch.acceptance.freshness import freshness_line

        least = r.thresholds.get("min_freshness")
        said = freshness_line(r.freshness).removeprefix("freshness").removeprefix(":").lstrip()
        lines.append(f"  freshness          {said}"
                     + ("" if least is None else f" (min {least:g})"))
    if r.pipeline is not None:
        from recallwatch.cli.ops._pipeline import pipeline_lines

        lines.extend(pipeline_lines(r.pipeline.to_dict()))
    if r.live is not None:
        lines.extend(_live_text(r.live))
    if r.budget is not None:
        lines.append(f"  {r.budget.summary()}")
    if r.reindex is not None:
        lines.append(f"  {r.reindex['summary']}")
    lines.extend(f"  note: {n}" for n in r.notes)
    lines.extend(f"ALARM: {a}" for a in r.alarms)
    if not r.alarms:
        lines.append("OK")
    return "\n".join(lines)


def _resources_text(res: dict[str, Any]) -> str:
    from recallwatch.acceptance.cost import format_cost

    index = ("size not reported by the store" if res["index_bytes"] is None
             else format_cost("index_bytes", res["index_bytes"]))
    return (f"  resources          {res['rows']:,} rows × {res['dimensions']} dimensions: "
            f"vectors {format_cost('index_bytes', res['vector_bytes'])} (float32), "
            f"ANN index {index}")


def _live_text(live: LiveCheck) -> list[str]:
    from recallwatch.ops.live_signals import LIVE_SIGNALS

    s = live.signals
    window = s["window"]
    span = ("the whole log" if window["start"] is None else
            f"{window['start'][:19]} to {window['end'][:19]}")
    log = s.get("log") or {}
    lines = [f"  live traffic       {s['impressions']:,} impressions, {span}"
             + (f" ({log['path']}, sha256 {str(log.get('sha256', ''))[:12]}…)" if log else "")]
    changes = {c["signal"]: c for c in live.changes}
    unstated = []
    for sig in LIVE_SIGNALS:
        value = live.value(sig.path)
        limit = getattr(live.policy, sig.bound)
        shown = "—" if value is None else f"{value:.4g}{sig.unit}"
        if value is not None and sig.unit and not (s.get("latency_ci_ms") or {}).get(
                sig.path[-1]):  # a latency percentile from too few latencies: not stated
            shown = "not stated"
            unstated.append(sig.label)
        bound = ("no threshold" if limit is None else
                 f"{'max' if sig.upper else 'min'} {limit:g}{sig.unit}")
        c = changes.get(sig.path[0])
        versus = "" if c is None else (f"; baseline {c['baseline']:.4g}, "
                                       f"{c['relative_change']:+.0%}")
        lines.append(f"    {sig.label:<20} {shown:<12} ({bound}{versus})")
    if unstated:
        from recallwatch.stats import calls_needed

        lines.append(f"    ({', '.join(unstated)} not stated: {s.get('latency_count', 0):,} "
                     f"logged latencies, {calls_needed(0.99):,} needed for its 95 % interval)")
    if live.baseline is None:
        lines.append("    (no baseline: the window holds the whole log)")
    else:
        b = live.baseline
        lines.append(f"    baseline           {b['impressions']:,} impressions, "
                     f"{b['window']['start'][:19]} to {b['window']['end'][:19]}")
    return lines


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
    version: Annotated[str, typer.Option("--probe-version", help="Probe-set version.")] = "1",
) -> None:
    """Build a versioned probe set from the queries of a golden set (--golden) and/or a random
    sample of logged queries (--queries, --sample, drawn with --seed)."""
    from recallwatch._files import check_output_file
    from recallwatch.formats.golden import load_golden
    from recallwatch.ops.probes import build_probes, write_probes

    check_output_file(out, "OUT", example="probes.json")
    built = build_probes(golden=None if golden is None else load_golden(golden),
                         logged=() if queries is None else queries,
                         sample=sample, seed=seed, name=name, version=version)
    write_probes(built, out)
    emit(f"wrote {out}: {len(built)} probes, {name} v{version}, hash {built.hash}")


def monitor(
    probes_file: ProbesFile,
    store: StoreURIOrNone = None,
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
    reindex_below: Annotated[float | None, typer.Option(
        "--reindex-below", min=0.0, max=1.0,
        help="Close the loop: when recall@k falls under this, rebuild the index in the "
        "background, check the new one on the probes, and switch to it only if it reaches "
        "--floor and is not worse than the live one beyond --max-recall-loss.")] = None,
    reindex_window: ReindexWindowHours = 24.0,
    max_recall_loss: MaxRecallLoss = 0.01,
    min_coverage: MinCoverage = 0.5,
    log: Annotated[Path | None, typer.Option(
        "--log", help="Interaction log of real traffic (JSON Lines, plain or gzip): adds the "
        "no-result rate, click-through rate, abandonment and latency percentiles, each with an "
        "alarm threshold.")] = None,
    live_window: Annotated[str | None, typer.Option(
        "--window", help="Judge the last stretch of the log, ending at its newest impression: "
        "e.g. 30m, 24h, 7d, or all for the whole log (default: the newest 24h, or the newer "
        "half of a log spanning less than 48h).")] = None,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="Compare the window with the stretch of the log just before it, at "
        "most this long (default 7d).")] = None,
    max_drop: Annotated[float | None, typer.Option(
        "--max-drop", help="Alarm when, against the baseline, click-through rate falls or the "
        "no-result rate or abandonment rises by at least this many percent and a one-sided "
        "test says it is not chance (p < 0.01); 0 switches it off (default 20).")] = None,
    max_no_result_rate: Annotated[float | None, typer.Option(
        "--max-no-result-rate", help="Alarm when more than this share of searches showed "
        "nothing (default 0.30).")] = None,
    min_ctr: Annotated[float | None, typer.Option(
        "--min-ctr", help="Alarm when clicked results per search fall under this (default "
        "0.05).")] = None,
    max_abandonment: Annotated[float | None, typer.Option(
        "--max-abandonment", help="Alarm when more than this share of searches got no click "
        "(default 0.90).")] = None,
    max_latency_p99: Annotated[float | None, typer.Option(
        "--max-latency-p99", help="Alarm when the 99th percentile of logged latency is surely "
        "over this many milliseconds: its 95 % interval's low end above it (default "
        "2000).")] = None,
    max_probe_latency_p99: Annotated[float | None, typer.Option(
        "--max-probe-latency-p99", help="Alarm when the 99th percentile of the probes' own "
        "search time is surely over this many milliseconds: the probes are searched again in "
        "rounds (368 calls or 10 s) and the p99's 95 % interval must lie above it; needs no log "
        "(default: the --policy file's max_latency_p99_ms, the gate's latency cap, if it sets "
        "one).")] = None,
    min_freshness: Annotated[float | None, typer.Option(
        "--min-freshness", min=0.0, max=1.0,
        help="Alarm when fewer than this share of the probes whose top k reaches a document "
        "with dated versions (chunks with valid_from) rank its newest valid version above the "
        "older ones; needs no log (default: the --policy file's min_freshness, if it sets "
        "one). Without dated chunks freshness is not measured and never alarms.")] = None,
    live_min_impressions: Annotated[int | None, typer.Option(
        "--live-min-impressions", help="Below this many impressions in the window, report the "
        "rates but never alarm on them (default 100).")] = None,
    policy_file: PolicyFile = None,
    pipeline: PipelineFile = None,
    engine: EngineOption = EngineChoice.local,
    address: RayAddress = None,
    workers: RayWorkers = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Recall of the live index vs exact search, latency, coverage, index age, data drift, live
    signals from real traffic (--log) and the error budget. Exit 1 (and the webhook) on an
    alarm, e.g. recall below --floor or a live signal past its threshold.

    With --reindex-below, a low recall also triggers a verified reindex (the old index keeps
    serving until the new one passes; a failing one is never switched in). The alarm stands for
    the run that saw the low recall; the next run measures the new index.

    With --engine ray the exact search (the ground truth) is computed on Ray: the store's vectors
    are read in shards and each shard is scored by one Ray task, so the store need not fit in
    one machine's memory; the report is the same as with --engine local.

    Data drift is also a two-sample test with a p-value; it alarms only when the --policy file
    sets drift_alarm_p (e.g. 0.01) and the p-value falls under it (the rows are shuffled often
    enough for the threshold).

    The probes alone (no --log needed) alarm on coverage under --min-coverage, on their p99
    latency surely over --max-probe-latency-p99 (or the policy's max_latency_p99_ms): the whole
    95 % interval of the p99 above it, and on freshness under --min-freshness (or the policy's
    min_freshness): the share of probes whose top k ranks the newest valid version of each dated
    document it reaches above its older versions. A p99 over the cap within its interval is
    reported as within noise, not alarmed on; so is a live signal whose interval reaches its
    threshold.

    With --pipeline the probes (texts) are also searched through a pipeline of retrievers, and
    the latency cap applies to the pipeline (what users wait for). A pipeline alone (no --store)
    gives latency, answered share and failures only."""
    from recallwatch.cli.ops._pipeline import check_pipeline_only
    from recallwatch.errors import InputError, UsageError
    from recallwatch.ops.webhook import check_webhook

    if not 0.0 <= floor <= 1.0:  # NaN included; checked first, as the budget target defaults to it
        raise InputError(field="--floor", expected="a recall between 0 and 1", found=floor)
    if webhook is not None:
        check_webhook(webhook)  # now, not when an alarm fires
    loop = _reindex(reindex_below, reindex_window, max_recall_loss)
    budget = _budget_policy(floor, budget_target, budget_slo, budget_window, budget_days)
    live = _live_log(log, live_window, baseline=baseline, max_drop=max_drop,
                     max_no_result_rate=max_no_result_rate, min_ctr=min_ctr,
                     max_abandonment=max_abandonment, max_latency_p99=max_latency_p99,
                     min_impressions=live_min_impressions)
    live_check = None if live is None else live.check()
    settings = _settings(k, floor, min_coverage, loop, policy_file,
                         max_probe_latency_p99=max_probe_latency_p99,
                         min_freshness=min_freshness)
    if store is None:
        if pipeline is None:
            raise UsageError("give the store to monitor with --store URI, a pipeline with "
                             "--pipeline FILE, or both")
        check_pipeline_only(reindex_below=reindex_below, engine=engine.value, log=log)
    record, text = _measure(probes_file, store, pipeline, settings, _Run(
        budget=budget, live=live_check, history=history, no_history=no_history, engine=engine,
        address=address, workers=workers))
    _finish(record, text, fmt, webhook)


@dataclass(frozen=True)
class _Run:
    """What a monitor run is given beside its settings: the error budget, the live traffic's
    check, the history it records in (--history, --no-history), and where exact search runs
    (--engine)."""

    budget: BudgetPolicy
    live: LiveCheck | None
    history: Path | str
    no_history: bool
    engine: EngineChoice
    address: str | None
    workers: int | None


def _reindex(below: float | None, window_hours: float,
             max_recall_loss: float | None) -> ReindexSettings:
    """--reindex-below, --reindex-window-hours and --max-recall-loss."""
    from recallwatch._durations import span
    from recallwatch.ops.monitor import ReindexSettings

    return ReindexSettings(below, span(window_hours, "hours", "--reindex-window-hours"),
                           max_recall_loss)


def _budget_policy(floor: float, target: float | None, slo: float, window: int | None,
                   days: float | None) -> BudgetPolicy:
    """The --budget-* options (the objective defaults to --floor, the window to 30 runs)."""
    from recallwatch.ops.budget import BudgetPolicy

    runs = window if window is not None or days is not None else 30
    return BudgetPolicy(target=floor if target is None else target, slo=slo, window_runs=runs,
                        window_days=days)


def _settings(k: int, floor: float, min_coverage: float, loop: ReindexSettings,
              policy_file: Path | None, *, max_probe_latency_p99: float | None,
              min_freshness: float | None) -> MonitorSettings:
    """The depth and the alarm thresholds; the ones not given come from the --policy file (the
    drift alarm's p-value only from there)."""
    from recallwatch.formats.policy import load_policy
    from recallwatch.ops.monitor import AlarmThresholds, MonitorSettings

    loaded = load_policy(policy_file)
    limits = loaded.limits
    thresholds = AlarmThresholds(
        floor=floor, min_coverage=min_coverage, drift_alarm_p=loaded.drift_alarm_p,
        max_latency_p99_ms=(limits.max_latency_p99_ms if max_probe_latency_p99 is None
                            else max_probe_latency_p99),
        min_freshness=limits.min_freshness if min_freshness is None else min_freshness)
    return MonitorSettings(k=k, thresholds=thresholds, reindex=loop)


@contextmanager
def recorded_in(history: Path | str, no_history: bool) -> Iterator[History | None]:
    """The history the run is recorded in (None with --no-history), closed after it."""
    hist = recording_history(history, no_history)
    try:
        yield hist
    finally:
        if hist is not None:
            hist.close()


def _measure(probes_file: Path, store: str | None, pipeline: Path | None,
             settings: MonitorSettings, run: _Run) -> tuple[dict[str, Any], str]:
    """The monitor's record and its text: the store's run (with the probes through the
    pipeline, if any), or the pipeline's probes alone."""
    from recallwatch.cli.ops._pipeline import pipeline_only_text, probed
    from recallwatch.ops.monitor import MONITOR_KIND, run_monitor
    from recallwatch.ops.pipeline_probes import record_pipeline_probes
    from recallwatch.ops.probes import load_probes

    probe_set = load_probes(probes_file)
    t = settings.thresholds
    with probed(pipeline, probe_set, k=settings.k, min_coverage=t.min_coverage,
                max_latency_p99_ms=t.max_latency_p99_ms) as through, \
            recorded_in(run.history, run.no_history) as hist:
        if store is None:
            assert through is not None  # a pipeline was given (checked before)
            record = record_pipeline_probes(through, probe_set, hist, kind=MONITOR_KIND)
            return record, pipeline_only_text(record)
        vs = open_store(store)
        try:
            with exact_search(run.engine, run.address, run.workers) as exact:
                report = run_monitor(vs, probe_set, settings, budget=run.budget,
                                     history=hist, live=run.live, exact=exact,
                                     pipeline=through)
        finally:
            vs.close()
    return report.to_dict(), _monitor_text(report)


def _finish(record: dict[str, Any], text: str, fmt: TableJson, webhook: str | None) -> None:
    """Print the record (--format), POST it to the webhook on an alarm, exit 1 on an alarm."""
    from recallwatch.ops.webhook import post_webhook

    if fmt is TableJson.json:
        emit_json(record)
    else:
        emit(text)
    if record["alarm"] and webhook:
        status = post_webhook(webhook, {"event": "recallwatch.monitor.alarm", **record})
        typer.echo(f"webhook: HTTP {status}", err=True)
    raise typer.Exit(1 if record["alarm"] else 0)


@contextmanager
def exact_search(engine: EngineChoice, address: str | None,
                 workers: int | None) -> Iterator[ExactSearch | None]:
    """The exact search ``--engine`` asks for, inside its session: None for the store's own
    (local), the Ray engine's in a connected Ray session (ray)."""
    from recallwatch.scale import engine_session

    with engine_session(engine.value, address, workers) as on_ray:
        if not on_ray:
            yield None
            return
        from recallwatch.scale.ray_exact_knn import RayExactSearch

        yield RayExactSearch(workers=workers)


def _live_log(log: Path | None, window: str | None, *, baseline: str | None,
              max_drop: float | None, max_no_result_rate: float | None,
              min_ctr: float | None, max_abandonment: float | None,
              max_latency_p99: float | None, min_impressions: int | None) -> LiveLog | None:
    """--log with its window and its thresholds (the ones not given at their defaults); None
    without a log."""
    from recallwatch.errors import UsageError
    from recallwatch.online.live import DEFAULT_BASELINE, LiveLog, parse_window
    from recallwatch.ops.live_signals import LivePolicy

    given = (max_no_result_rate, min_ctr, max_abandonment, max_latency_p99, min_impressions,
             baseline, max_drop)
    if log is None:
        if window is not None or any(v is not None for v in given):
            raise UsageError("--window and the live thresholds need --log (an interaction log)")
        return None
    d = LivePolicy()
    policy = LivePolicy(
        max_no_result_rate=d.max_no_result_rate if max_no_result_rate is None
        else max_no_result_rate,
        min_ctr=d.min_ctr if min_ctr is None else min_ctr,
        max_abandonment=d.max_abandonment if max_abandonment is None else max_abandonment,
        max_latency_p99_ms=d.max_latency_p99_ms if max_latency_p99 is None else max_latency_p99,
        min_impressions=d.min_impressions if min_impressions is None else min_impressions,
        max_relative_change=d.max_relative_change if max_drop is None
        else (max_drop / 100.0 if max_drop != 0 else None))
    if window == "all":  # the whole log: no baseline before it
        return LiveLog(log, "all", policy=policy)
    return LiveLog(log, None if window is None else parse_window(window),
                   DEFAULT_BASELINE if baseline is None else parse_window(baseline, "--baseline"),
                   policy)


def register(app: typer.Typer) -> None:
    app.command("probes")(probes)
    app.command("monitor")(monitor)
