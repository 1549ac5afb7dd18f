"""``recallwatch history copy SRC DST``: move a run history between a SQLite file and PostgreSQL.

Exit codes: 0 copied; 2 usage or input error (a non-empty destination without ``--replace``, an
unreadable source…). Registered into the ``history`` group by name, so it does not depend on how
the other history commands are laid out.
"""

from __future__ import annotations

import json

import typer

from recallwatch.cli._common import emit
from recallwatch.cli._options import TableJson, TableJsonFormat


def copy(
    source: str = typer.Argument(..., help="The history to read: a SQLite file or "
                                 "postgresql://USER@HOST:PORT/DB (opened read-only)."),
    destination: str = typer.Argument(..., help="The history to write: a SQLite file (created "
                                      "if missing) or postgresql://USER@HOST:PORT/DB."),
    replace: bool = typer.Option(False, "--replace", help="Empty a non-empty destination first "
                                 "(in the same transaction as the copy)."),
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Copy every run, query row, monitor record, online readout and recorded experiment, ids and
    order included, in one transaction.

    A destination that already holds runs or monitor records is refused unless --replace.
    Passwords come from the environment (PGPASSWORD, ?password_env=VAR, or the credentials file).
    """
    from recallwatch.history import copy_history
    from recallwatch.report import visible

    report = copy_history(source, destination, replace=replace)
    if fmt is TableJson.json:
        emit(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    replaced = ""
    if report.replaced:
        replaced = (f" (replacing its {report.replaced['runs']} run(s) and "
                    f"{report.replaced['monitor_runs']} monitor record(s))")
    emit(visible(f"copied {report.runs} run(s), {report.query_results} query row(s), "
                 f"{report.monitor_runs} monitor record(s), {report.online_readouts} online "
                 f"readout(s) and {report.experiments} experiment(s) from {report.source} to "
                 f"{report.destination}{replaced}; schema version {report.schema_version}"))


def register(app: typer.Typer) -> None:
    app.command("copy")(copy)
