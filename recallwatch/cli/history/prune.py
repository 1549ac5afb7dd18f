"""``recallwatch history prune``: keep the last N runs or N days of a run history, and every
baseline and production run.

Exit codes: 0 pruned (or listed, with ``--dry-run``; a dry run on a history file that does not
exist yet has nothing to list); 2 usage or input error (no window given, a negative number, an
unreadable or read-only history…). Registered into the ``history`` group by name, as
``history copy`` is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._common import emit, emit_json, existing_history
from recallwatch.cli._options import DEFAULT_HISTORY, HistoryPath, TableJson, TableJsonFormat


def _size(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def prune(
    history: HistoryPath = DEFAULT_HISTORY,
    keep_last: Annotated[int | None, typer.Option(
        "--keep-last", help="Keep the newest N runs (all datasets together).")] = None,
    keep_days: Annotated[int | None, typer.Option(
        "--keep-days", help="Keep the runs recorded in the last N days (UTC).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="List the runs that would be removed; remove nothing.")] = False,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Remove old gate runs: keep the last N runs (--keep-last) or the last N days
    (--keep-days); with both, a run either keeps stays.

    Always kept: every baseline (the latest ACCEPT of each golden set and policy, the latest
    run of each dataset), every run that allowed a promotion to production (ops promote), and
    the runs of the offline-to-online funnel. The runs and their per-query rows go in one
    transaction; then a SQLite file is compacted (VACUUM) and PostgreSQL marks the space for
    reuse. Monitor records and online readouts are kept.
    """
    from recallwatch.history import is_postgresql, nothing_to_prune, prune_history
    from recallwatch.report import visible

    if dry_run and not is_postgresql(history) and not Path(history).exists():
        report = nothing_to_prune(history, keep_last=keep_last, keep_days=keep_days)
    else:
        with existing_history(history) as h:
            report = prune_history(h, keep_last=keep_last, keep_days=keep_days,
                                   dry_run=dry_run)
    if fmt is TableJson.json:
        emit_json(report.to_dict())
        return
    if not report.exists:
        emit(f"{visible(report.location)}: no run history there yet, so nothing to prune (the "
             "gate creates it when it records its first run)")
        return
    verb = "would remove" if dry_run else "removed"
    lines = [f"{visible(report.location)}: {verb} {len(report.removed)} of "
             f"{report.runs_before} run(s), {_size(report.bytes_removed)} of stored runs and "
             f"query rows; kept {report.protected} older run(s) that are baselines, production "
             "or funnel runs"]
    if dry_run:
        lines += [f"  {visible(r.run_id):<23}  {r.created_at.replace('T', ' ')[:16]}  "
                  f"{r.verdict:<6}  {visible(r.dataset_name)} v{visible(r.dataset_version)}"
                  for r in report.removed]
    else:
        lines.append(f"history size {_size(report.size_before)} -> {_size(report.size_after)}"
                     + (" (PostgreSQL reuses the freed space for new runs; its files keep "
                        "their size)" if report.backend == "postgresql" else ""))
        if report.not_reclaimed:
            lines.append(f"note: {report.not_reclaimed}")
    emit("\n".join(lines))


def register(app: typer.Typer) -> None:
    app.command("prune")(prune)
