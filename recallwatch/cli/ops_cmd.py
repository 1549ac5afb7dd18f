"""Operations commands: ``probes``, ``monitor``, ``reindex``, ``rollback``,
``calibrate-threshold``, ``calibrate-noise`` and ``groups``.

Exit codes: 0 healthy / done, 1 alarm (monitor) or not switched (reindex), 2 usage or input error.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from recallwatch.cli._common import DEFAULT_HISTORY, HISTORY_HELP, TableJson, emit

if TYPE_CHECKING:
    from recallwatch.ops.monitor import MonitorReport
    from recallwatch.stores.base import VectorStore
    from recallwatch.suite.model import GateResult


class NoiseFormat(str, Enum):
    yaml = "yaml"
    json = "json"


class NegativesChoice(str, Enum):
    in_domain = "in-domain"
    off_domain = "off-domain"
    both = "both"


def _json(obj: Any) -> None:
    emit(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


def _open(uri: str) -> VectorStore:
    from recallwatch.stores import open_store

    return open_store(uri)


def _history(path: str, off: bool) -> Any:
    if off:
        return None
    from recallwatch.history import History

    return History(path)


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
    out: Path = typer.Argument(..., help="Probe-set file to write (JSON)."),
    golden: Path | None = typer.Option(None, "--golden", help="Golden set: its queries."),
    queries: Path | None = typer.Option(None, "--queries", help="Logged queries (.txt one per "
                                        "line, or .jsonl with a text field)."),
    sample: int | None = typer.Option(None, "--sample", help="Draw this many logged queries."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample."),
    name: str = typer.Option("probes", "--name", help="Probe-set name."),
    version: str = typer.Option("1", "--version", help="Probe-set version."),
) -> None:
    """Build a versioned probe set from a golden set and/or a sample of logged queries."""
    from recallwatch.formats.golden import load_golden
    from recallwatch.ops.probes import build_probes, read_logged_queries, write_probes

    built = build_probes(golden=None if golden is None else load_golden(golden),
                         logged=[] if queries is None else read_logged_queries(queries),
                         sample=sample, seed=seed, name=name, version=version)
    write_probes(built, out)
    emit(f"wrote {out}: {len(built)} probes, {name} v{version}, hash {built.hash}")


def monitor(
    store: str = typer.Option(..., "--store", help="Store URI, e.g. lancedb://kb?table=chunks."),
    probes_file: Path = typer.Option(..., "--probes", help="Probe set (.json from `recallwatch "
                                     "probes`, .txt/.jsonl logged queries, or .npy vectors)."),
    k: int = typer.Option(10, "--k", help="Depth of recall@k."),
    floor: float = typer.Option(0.95, "--floor", help="Alarm when recall@k vs exact is below."),
    history: str = typer.Option(str(DEFAULT_HISTORY), "--history", help=HISTORY_HELP),
    no_history: bool = typer.Option(False, "--no-history", help="Do not record the run."),
    webhook: str | None = typer.Option(None, "--webhook", help="POST the report as JSON here "
                                       "when the monitor alarms."),
    budget_target: float | None = typer.Option(None, "--budget-target", help="Error-budget "
                                               "objective: recall@k ≥ this (default: --floor)."),
    budget_slo: float = typer.Option(0.90, "--budget-slo", help="Share of runs in the window "
                                     "that must meet the objective."),
    budget_window: int | None = typer.Option(None, "--budget-window", help="Window: the last N "
                                             "monitor runs (default 30)."),
    budget_days: float | None = typer.Option(None, "--budget-days", help="Window: the last D "
                                             "days, instead of --budget-window."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="Output on stdout."),
) -> None:
    """Recall of the live index vs exact search, latency, coverage, index age, data drift and
    the error budget. Exit 1 (and the webhook) on an alarm."""
    from recallwatch.ops.budget import BudgetPolicy
    from recallwatch.ops.monitor import post_webhook, run_monitor
    from recallwatch.ops.probes import load_probes

    window = budget_window if budget_window is not None or budget_days is not None else 30
    policy = BudgetPolicy(target=floor if budget_target is None else budget_target,
                          slo=budget_slo, window_runs=window, window_days=budget_days)
    probe_set = load_probes(probes_file)
    vs = _open(store)
    hist = _history(history, no_history)
    try:
        report = run_monitor(vs, probe_set, k=k, floor=floor, budget=policy, history=hist)
    finally:
        vs.close()
        if hist is not None:
            hist.close()
    if fmt is TableJson.json:
        _json(report.to_dict())
    else:
        emit(_monitor_text(report))
    if report.alarm and webhook:
        status = post_webhook(webhook, {"event": "recallwatch.monitor.alarm", **report.to_dict()})
        typer.echo(f"webhook: HTTP {status}", err=True)
    raise typer.Exit(1 if report.alarm else 0)


def reindex(
    store: str = typer.Option(..., "--store", help="Store URI (any adapter: lancedb://, "
                              "postgresql://, qdrant://, milvus://, chroma://, faiss://, "
                              "hnswlib://). The new index is built with the URI's index "
                              "parameters."),
    probes_file: Path = typer.Option(..., "--probes", help="Probe set that verifies the new "
                                     "index before the switch."),
    k: int = typer.Option(10, "--k", help="Depth of recall@k."),
    floor: float = typer.Option(0.95, "--floor", help="Switch only when the new index's "
                                "recall@k vs exact is at least this."),
    history: str = typer.Option(str(DEFAULT_HISTORY), "--history", help=HISTORY_HELP),
    no_history: bool = typer.Option(False, "--no-history", help="Do not record the reindex."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="Output on stdout."),
) -> None:
    """Build a new index in the background, verify it, and switch atomically (exit 1: the new
    index missed the floor and the current one keeps serving). LanceDB: one index commit; other
    adapters: a copy of production with a fresh index, promoted by the engine's view, alias or
    pointer switch once verified and checked to hold the same content."""
    from recallwatch.ops.probes import load_probes
    from recallwatch.ops.reindex import reindex as run

    probe_set = load_probes(probes_file)
    vs = _open(store)
    hist = _history(history, no_history)
    try:
        result = run(vs, probe_set, k=k, floor=floor, history=hist)
    finally:
        vs.close()
        if hist is not None:
            hist.close()
    if fmt is TableJson.json:
        _json(result.to_dict())
    else:
        emit(f"reindex {result.store}: {result.reason}\n"
             f"  recall@{k} vs exact: live {result.recall_before:.3f} → new "
             f"{result.recall_candidate:.3f}; version {result.built_on_version} → "
             f"{result.version}\n  build {result.build_seconds:.1f} s, verify "
             f"{result.verify_seconds:.1f} s, switch {result.switch_seconds:.2f} s")
    raise typer.Exit(0 if result.switched else 1)


def rollback(
    store: str = typer.Option(..., "--store", help="Store URI (any adapter with reindex)."),
    history: str = typer.Option(str(DEFAULT_HISTORY), "--history", help=HISTORY_HELP),
    no_history: bool = typer.Option(False, "--no-history", help="Do not record the rollback."),
) -> None:
    """Put back the index the last reindex replaced (one atomic commit on LanceDB; on the other
    adapters production moves back to the previous version, which was kept)."""
    from recallwatch.ops.reindex import rollback as run

    vs = _open(store)
    hist = _history(history, no_history)
    try:
        done = run(vs, history=hist)
    finally:
        vs.close()
        if hist is not None:
            hist.close()
    emit(f"rolled back {done['store']}: previous index restored at version {done['version']}")


def calibrate_threshold(
    golden: Path = typer.Argument(..., help="Golden set: the answerable queries and the chunks "
                                  "that answer them."),
    store: str = typer.Option(..., "--store", help="Store URI."),
    negatives: NegativesChoice | None = typer.Option(
        None, "--negatives", help="Unanswerable queries to calibrate against. in-domain: each "
        "golden query searched with its expected chunks removed, so its answer is absent (the "
        "hard case); off-domain: questions about other subjects (--unanswerable, or a shipped "
        "list), easy to reject; both. Default: in-domain, or both with --unanswerable."),
    unanswerable: Path | None = typer.Option(None, "--unanswerable", help="Off-domain "
                                             "unanswerable queries (.txt or .jsonl); default: "
                                             "the shipped list of queries from unrelated "
                                             "domains."),
    target_precision: float | None = typer.Option(None, "--target-precision", help="Lowest "
                                                  "threshold reaching this precision."),
    target_coverage: float | None = typer.Option(None, "--target-coverage", help="Highest "
                                                 "threshold keeping this coverage."),
    embedder: str | None = typer.Option(None, "--embedder", help="Embedder spec (default: the "
                                        "one recorded in the store at ingestion)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Do not store the threshold."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="Output on stdout."),
) -> None:
    """The no-result threshold: results scoring below it are dropped, and a query left with
    nothing gets "no result". Prints precision (share of answers that hold an expected chunk)
    and coverage (share of answerable queries answered) at each threshold, and the chosen point,
    stored in the store's metadata under the embedder's fingerprint."""
    from recallwatch.embedders import embedder_from_spec
    from recallwatch.embedders.base import SPEC_META_KEY
    from recallwatch.errors import UsageError
    from recallwatch.formats.golden import load_golden
    from recallwatch.ops.calibrate import Negatives, Target, store_threshold
    from recallwatch.ops.calibrate import calibrate_threshold as run
    from recallwatch.ops.probes import read_logged_queries

    if target_precision is not None and target_coverage is not None:
        raise UsageError("give at most one of --target-precision and --target-coverage")
    target: Target = "coverage" if target_coverage is not None else "precision"
    value = target_coverage if target_coverage is not None else (
        0.95 if target_precision is None else target_precision)
    kind: Negatives = (negatives.value if negatives is not None
                       else "both" if unanswerable is not None else "in-domain")
    gold = load_golden(golden)
    off = None if unanswerable is None else read_logged_queries(unanswerable)
    vs = _open(store)
    try:
        spec = embedder or vs.get_meta(SPEC_META_KEY)
        if not isinstance(spec, str):
            raise UsageError(f"{vs.uri} does not record its embedder: give --embedder")
        cal = run(vs, embedder_from_spec(spec), gold, off, negatives=kind, target=target,
                  value=value, unanswerable_source=None if unanswerable is None
                  else str(unanswerable))
        if not dry_run:
            store_threshold(vs, cal)
    finally:
        vs.close()
    if fmt is TableJson.json:
        _json(cal.to_dict())
        return
    lines = [f"An answer is a query's top {gold.top_k} results scoring at least the threshold; "
             "with none, the answer is \"no result\".",
             "precision: answers holding an expected chunk ÷ answers given (to answerable and "
             "unanswerable queries); coverage: answerable queries answered ÷ answerable queries.",
             f"{'threshold':>10} {'precision':>10} {'coverage':>9}"]
    step = max(1, len(cal.curve) // 20)
    shown = list(cal.curve[::step])
    lines += [f"{t:>10.4f} {p:>10.3f} {c:>9.3f}" for t, p, c in shown]
    verb = "reaches" if cal.reached else "does NOT reach (closest point)"
    lines.append(f"chosen threshold {cal.threshold:.4f}: precision {cal.precision:.3f}, coverage "
                 f"{cal.coverage:.3f} — {verb} target {cal.target} {cal.target_value:g}; "
                 f"{cal.answerable} answerable, {cal.unanswerable} unanswerable "
                 f"({cal.unanswerable_source})")
    lines.append("not stored (--dry-run)" if dry_run else
                 f"stored in {store} for embedder {cal.fingerprint and cal.fingerprint['name']}")
    emit("\n".join(lines))


def _gate_result(golden: Path, store: str | None, results: Path | None,
                 policy: Path | None) -> GateResult:
    from recallwatch.suite.gate import gate_from_files

    return gate_from_files(golden, store=store, results=results, policy=policy)


def calibrate_noise(
    golden: Path = typer.Argument(..., help="Golden set."),
    store: str | None = typer.Option(None, "--store", help="Store URI."),
    results: Path | None = typer.Option(None, "--results", help="Results file, instead of "
                                        "--store."),
    policy: Path | None = typer.Option(None, "--policy", help="Policy file (YAML)."),
    margin: int = typer.Option(1, "--margin", help="Chunks of noise allowed above the baseline."),
    fmt: NoiseFormat = typer.Option(NoiseFormat.yaml, "--format", help="Output on stdout."),
) -> None:
    """From a full gate run: the noise of the healthy queries per domain and a suggested
    ceiling, as a policy YAML snippet."""
    from recallwatch.ops.calibrate import calibrate_noise as run

    cal = run(_gate_result(golden, store, results, policy), margin=margin)
    if fmt is NoiseFormat.json:
        _json(cal.to_dict())
    else:
        emit(cal.policy_yaml())


def groups(
    run: str = typer.Argument(..., help="A run id (or latest, accepted…) from the history, or "
                              "a gate report JSON file."),
    by: str = typer.Option(..., "--by", help="Golden field: domain, tags, language, source…"),
    metric: str = typer.Option("quality", "--metric", help="quality, recall, precision, rr, "
                               "ndcg, noise or passed."),
    golden: Path | None = typer.Option(None, "--golden", help="Golden set (for fields other "
                                       "than domain and tags)."),
    policy: Path | None = typer.Option(None, "--policy", help="Flag groups below the policy's "
                                       "min_group_quality."),
    history: str = typer.Option(str(DEFAULT_HISTORY), "--history", help=HISTORY_HELP),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="Output on stdout."),
) -> None:
    """A metric of a gate run by group, with each group's gap to the overall mean and a
    bootstrap 95 % interval of the gap."""
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy
    from recallwatch.ops.groups import group_gaps

    result = _load_run(run, history)
    minimum = load_policy(policy).min_group_quality if policy is not None else None
    rep = group_gaps(result, by, metric,  # type: ignore[arg-type]
                     golden=None if golden is None else load_golden(golden), minimum=minimum)
    if fmt is TableJson.json:
        _json(rep.to_dict())
        return
    lines = [f"{rep.metric} by {rep.field} — run {rep.run_id}: overall {rep.overall:.3f} over "
             f"{rep.n} queries",
             f"{'group':<24} {'n':>4} {'mean':>9} {'gap':>9}  {'95% CI of gap':<22}"]
    for g in rep.groups:
        flag = f"  BELOW min_group_quality {rep.minimum:g}" if g.below_min else ""
        lines.append(f"{g.group[:24]:<24} {g.n:>4} {g.mean:>9.3f} {g.gap:>+9.3f}  "
                     f"[{g.ci_low:+.3f}, {g.ci_high:+.3f}]{flag}")
    emit("\n".join(lines))


def _load_run(ref: str, history: str) -> GateResult:
    from recallwatch.errors import InputError
    from recallwatch.suite.model import GateResult

    path = Path(ref)
    if path.suffix.lower() == ".json" or path.is_file():
        try:
            return GateResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except OSError as exc:
            raise InputError(source=path, expected="a readable gate report",
                             found=exc.strerror) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(source=path, expected="a gate report JSON (recallwatch gate "
                             "--format json)", found=str(exc)[:80]) from None
    from recallwatch.history import History

    with History(history, create=False) as h:
        return h.load(h.resolve(ref))


def register(app: typer.Typer) -> None:
    app.command("probes")(probes)
    app.command("monitor")(monitor)
    app.command("reindex")(reindex)
    app.command("rollback")(rollback)
    app.command("calibrate-threshold")(calibrate_threshold)
    app.command("calibrate-noise")(calibrate_noise)
    app.command("groups")(groups)
