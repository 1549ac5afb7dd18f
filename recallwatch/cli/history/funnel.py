"""``recallwatch history funnel``: per change, the offline delta and the online readout attached
to it (``recallwatch online ab … --history H --change RUN``), and whether they agreed.

Exit codes: 0 listed (disagreements are information, not a failure); 2 usage or input error.
"""

from __future__ import annotations

import json

import typer

from recallwatch.cli._common import emit, existing_history
from recallwatch.cli._options import DEFAULT_HISTORY, HistoryPath, TableJson, TableJsonFormat


def funnel(
    history: HistoryPath = DEFAULT_HISTORY,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Changes with their offline delta (gate run vs its baseline) and online delta (the A/B
    readout attached to them), newest first: agreed, disagreed (an offline gain users did not
    see is a test-set mirage: trust the online result) or undecided."""
    from recallwatch.report import visible

    with existing_history(history) as h:
        rows = h.online_readouts()
    if fmt is TableJson.json:
        emit(json.dumps([r.to_dict() for r in rows], indent=2, ensure_ascii=False))
        return
    if not rows:
        emit("no online readout attached yet: `recallwatch online ab LOG --history H --change "
             "RUN` attaches one")
        return
    counts = {k: sum(r.agreement == k for r in rows) for k in ("agreed", "disagreed",
                                                                "undecided")}
    lines = [f"{len(rows)} change(s) read out online: {counts['agreed']} agreed, "
             f"{counts['disagreed']} disagreed, {counts['undecided']} undecided",
             f"{'when':<20} {'change':<24} {'offline':<15} {'online':<34} agreement"]
    for r in rows:
        off = "—" if r.offline_delta is None else f"{r.offline_metric} {r.offline_delta:+.4f}"
        on = "—" if r.online_delta is None else f"{r.online_metric} {r.online_delta:+.4g}"
        change = r.change_run + (f" (promote:{r.promote_id})" if r.promote_id else "")
        lines.append(visible(f"{r.created_at[:19]:<20} {change:<24} {off:<15} "
                             f"{on + ' (' + r.online_verdict + ')':<34} {r.agreement}: "
                             f"{r.payload.get('reading', '')}"))
    emit("\n".join(lines))


def register(app: typer.Typer) -> None:
    app.command("funnel")(funnel)
