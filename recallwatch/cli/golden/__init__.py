"""``recallwatch golden …``: build and keep the golden set (the group; each of its commands lives in
the module of its name: ``sample`` (with ``split``), ``check`` (with ``migrate``), ``generate``)."""

from __future__ import annotations

import typer

from recallwatch.cli._common import register_modules

golden_app = typer.Typer(
    help="Build and keep the golden set: check its labels against a store, migrate them across "
    "a re-chunking, sample real queries from a log, split it into tune and test parts.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    register_modules(golden_app, __name__, ("sample", "check", "generate", "qrels"))
    app.add_typer(golden_app, name="golden")
