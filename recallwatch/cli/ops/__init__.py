"""``recallwatch ops …``: operate a live index (the group). Each command lives in the module of
its name: ``monitor`` (with ``probes``), ``reindex`` (with ``rollback``), ``promote``,
``calibrate`` (``calibrate-threshold`` and ``calibrate-noise``), ``serve`` (the dashboard)."""

from __future__ import annotations

import typer

from recallwatch.cli._common import register_modules

__all__ = ["register"]

ops_app = typer.Typer(
    help="Operate a live index: probe sets, the monitor and its dashboard (serve), reindex and "
    "rollback, promote, the no-result threshold and noise ceiling calibrations.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    register_modules(ops_app, __name__, ("monitor", "reindex", "promote", "calibrate", "serve"))
    app.add_typer(ops_app, name="ops")
