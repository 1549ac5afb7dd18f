"""``recallwatch history …``: list, show and compare gate runs; trends across runs.

Exit codes: 0 success; 1 ``trend`` found a degradation pattern; 2 usage or input error (unknown
run, unreadable history…).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from recallwatch.cli._common import emit, emit_json, existing_history, register_modules
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    AllPairs,
    BoundedAlpha,
    DatasetName,
    HistoryPath,
    StoreURIOrNone,
    TableJson,
    TableJsonFormat,
)

if TYPE_CHECKING:
    from rich.console import Console

history_app = typer.Typer(
    help="The run history: list, show and compare gate runs; trends across runs.",
    no_args_is_help=True,
)

_RUN_HELP = "A run id, a unique prefix of one, or latest / previous / accepted."
RunRef = Annotated[str, typer.Argument(help=_RUN_HELP)]


def _when(created_at: str) -> str:
    """``2025-06-13 17:40`` from an ISO UTC timestamp: what a person scans a list for."""
    return created_at.replace("T", " ")[:16]


def _measure(value: float | None) -> str:
    """An answer measure as a list shows it: ``-`` when the run has none (never 0)."""
    return "-" if value is None else f"{value:.3f}"


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@history_app.command("list")
def list_runs(
    history: HistoryPath = DEFAULT_HISTORY,
    dataset: DatasetName = None,
    limit: Annotated[int, typer.Option(
        "--limit", min=1, help="At most this many runs, newest first.")] = 50,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Recorded gate runs, newest first."""
    with existing_history(history) as h:
        runs = h.runs(dataset=dataset, limit=limit)
        location = h.location  # the file, or the URI with any password redacted
    if fmt is TableJson.json:
        emit_json({"runs": [r.to_dict() for r in runs]})
        return
    from recallwatch.report import visible

    # One line per run, like `git log --oneline`: readable in any width, greppable, and the run
    # id first and whole, to paste into `history show`.
    lines = [f"{len(runs)} run(s) in {visible(location)}"]
    # the answer measures, when a run listed judged answers ("-": a run that judged none)
    answers = any(r.has_answers for r in runs)
    if runs:
        lines.append(f"{'run':<23}  {'when (UTC)':<16}  {'verdict':<7}  {'quality':>7}  "
                     f"{'recall':>6}  {'failing':>9}  "
                     + (f"{'faithful':>8}  {'halluc.':>7}  " if answers else "")
                     + "dataset, index version")
    for r in runs:
        where = f"index v{r.index_version}" if r.index_version is not None else "results file"
        lines.append(
            f"{visible(r.run_id):<23}  {_when(r.created_at):<16}  {r.verdict:<7}  "
            f"{r.mean_quality:>7.1f}  {r.mean_recall:>6.3f}  "
            f"{f'{r.failed_queries}/{r.n_queries}':>9}  "
            + (f"{_measure(r.faithfulness):>8}  {_measure(r.hallucination_rate):>7}  "
               if answers else "")
            + f"{visible(r.dataset_name)} v{visible(r.dataset_version)}, {visible(where)}"
        )
    emit("\n".join(lines))


@history_app.command("show")
def show(
    run: RunRef,
    history: HistoryPath = DEFAULT_HISTORY,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """One run's full report, as the gate printed it (comparison with its baselines included)."""
    from recallwatch.report import to_json

    with existing_history(history) as h:
        result = h.load(h.resolve(run))
    if fmt is TableJson.json:
        emit(to_json(result))
        return
    from recallwatch.report.terminal import print_report

    print_report(result, _console())


@history_app.command("compare")
def compare(
    run_a: Annotated[str, typer.Argument(help=f"The baseline. {_RUN_HELP}")],
    run_b: Annotated[str, typer.Argument(help=f"The candidate. {_RUN_HELP}")],
    more_runs: Annotated[list[str] | None, typer.Argument(
        help="More runs: with three or more, one table of every run.",
        show_default=False)] = None,
    history: HistoryPath = DEFAULT_HISTORY,
    store: StoreURIOrNone = None,
    all_pairs: AllPairs = False,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """B against A: newly failing / passing queries, rank changes, paired tests, who buried it.

    With --store (the store both runs searched) it names the chunks ingested since A that now
    outrank B's expected ones.

    With three runs or more: one table, a row per run (lettered a, b, c…) with its mean quality,
    recall, MRR (rr) and nDCG@K on the queries every run scored, each run tested against A (or
    every pair with --all-pairs) with a paired randomization test, Holm-corrected across the
    table; the letters after a score name the runs it beats significantly. --format json prints
    the object of `recallwatch compare` with three runs ("runs", "aggregate", "tests")."""
    from recallwatch.history import ingested_since
    from recallwatch.history.compare import compare_many_runs, compare_runs

    if more_runs:
        with existing_history(history) as h:
            loaded = [h.load(h.resolve(r)) for r in [run_a, run_b, *more_runs]]
        table = compare_many_runs(loaded, all_pairs=all_pairs)
        if fmt is TableJson.json:
            emit_json(table.to_dict())
        else:
            emit(table.to_text())
        return
    with existing_history(history) as h:
        a = h.load(h.resolve(run_a))
        b = h.load(h.resolve(run_b))
    since: list[str] | None = None
    note = None
    if store is not None:
        from recallwatch.stores import open_store

        vector_store = open_store(store)
        try:
            since, note = ingested_since(a, vector_store, {})
        finally:
            vector_store.close()
    c = compare_runs(a, b, ingested_since=since)
    if note:
        c["details"].append(note)
    if fmt is TableJson.json:
        emit_json({"a": a.run_id, "b": b.run_id, **c})
        return
    _print_comparison(c, a.run_id, b.run_id)


def _print_comparison(c: dict[str, Any], a: str, b: str) -> None:
    from rich.table import Table
    from rich.text import Text

    from recallwatch.acceptance.cost import COST_LABELS, format_cost
    from recallwatch.history.compare import TESTED_METRICS
    from recallwatch.report import visible

    console = _console()
    console.print(Text(visible(f"{b} vs {a}: {c['summary']}"), style="bold"))
    if c["deltas"]:
        table = Table(title_justify="left")
        for col in ("measure", "A", "B", "delta", "p (paired)", "p (Holm)"):
            table.add_column(col, justify="left" if col == "measure" else "right")
        for metric, d in c["deltas"].items():
            tested = metric in TESTED_METRICS
            table.add_row(metric, f"{d['old']:.3f}", f"{d['new']:.3f}", f"{d['delta']:+.3f}",
                          f"{d['p_value']:.3g}" if tested else "—",
                          (f"{d['p_holm']:.3g}{' *' if d['significant'] else ''}" if tested
                           else "—"))
        for key, d in c.get("cost", {}).items():  # what the quality cost, beside it
            interval = (f", ×{d['interval'][0]:.2f}–×{d['interval'][1]:.2f}"
                        if d.get("interval") else "")
            rise = "" if d["increase"] is None else f" ({d['increase']:+.0%}{interval})"
            table.add_row(COST_LABELS[key], format_cost(key, d["old"]),
                          format_cost(key, d["new"]),
                          ("+" if d["delta"] >= 0 else "−") + format_cost(key, abs(d["delta"]))
                          + rise, "—", "—")
        console.print(table)
    for line in c["details"]:
        console.print(Text(visible(line)))
    moves = [(q, cid, r) for q, m in c["rank_changes"].items() for cid, r in m.items()]
    if moves:
        table = Table(title="rank changes of expected chunks", title_justify="left")
        for col in ("query", "chunk", "A", "B"):
            table.add_column(col, overflow="fold")
        for q, cid, (ra, rb) in moves[:50]:
            table.add_row(visible(q), visible(cid), str(ra or ">depth"), str(rb or ">depth"))
        console.print(table)
        if len(moves) > 50:
            console.print(f"… and {len(moves) - 50} more (--format json lists them all)")


@history_app.command("trend")
def trend_cmd(
    history: HistoryPath = DEFAULT_HISTORY,
    dataset: DatasetName = None,
    last: Annotated[int, typer.Option(
        "--last", min=2, help="Number of runs to analyse.")] = 20,
    alpha: BoundedAlpha = 0.05,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Slow degradation, per-domain trends and noise creeping up over the last N comparable runs
    of one golden set (--dataset; default: the latest run's).

    Exit code 1 when a pattern is found (an alarm a scheduled job can act on), else 0.
    """
    from recallwatch.history.trend import trend

    with existing_history(history) as h:
        t = trend(h, dataset=dataset, last=last, alpha=alpha)
    if fmt is TableJson.json:
        emit_json(t.to_dict())
    else:
        _print_trend(t)
    if t.patterns:
        raise typer.Exit(1)


def _print_trend(t: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from recallwatch.history.trend import MIN_RUNS, explain_tests
    from recallwatch.report import visible

    console = _console()
    console.print(Text(visible(
        f"dataset {t.dataset} #{t.dataset_hash[:8]} · policy #{t.policy_hash[:8]} · config "
        f"#{t.config_hash[:8]} · {len(t.runs)} comparable run(s)"
        + (f" ({t.excluded} other run(s) of this dataset use another golden set, policy or "
           "configuration)" if t.excluded else "")), style="bold"))
    table = Table(title_justify="left")
    answers = any(r.has_answers for r in t.runs)
    for col in ("run", "created (UTC)", "verdict", "quality", "recall", "noise",
                *(("faithfulness", "hallucination rate") if answers else ())):
        table.add_column(col, overflow="fold", no_wrap=col == "run")
    for r in t.runs:
        table.add_row(visible(r.run_id), _when(r.created_at), r.verdict,
                      f"{r.mean_quality:.1f}", f"{r.mean_recall:.3f}", f"{r.mean_noise:.2f}",
                      *((_measure(r.faithfulness), _measure(r.hallucination_rate))
                        if answers else ()))
    console.print(table)
    for s in t.series.values():
        console.print(Text(s.describe()))
    if len(t.runs) < MIN_RUNS:
        console.print(Text(f"too few runs for a trend ({len(t.runs)}; at least {MIN_RUNS} "
                           "needed)", style="dim"))
    else:
        console.print(Text(explain_tests(t.alpha), style="dim"))
    for p in t.patterns:
        console.print(Text(visible(f"pattern {p.name}: {p.message}"), style="yellow"))
    if not t.patterns:
        console.print(Text("no trend pattern", style="green"))


def register(app: typer.Typer) -> None:
    register_modules(history_app, __name__, ("copy", "prune", "funnel", "groups"))
    app.add_typer(history_app, name="history")
