"""``recallwatch golden …``: build and keep the golden set (the group; its commands live in the
modules that register into it, e.g. ``golden_anchor_cmd`` and ``golden_sample_cmd``)."""

from __future__ import annotations

import typer

golden_app = typer.Typer(
    help="Build and keep the golden set: check its labels against a store, migrate them across "
    "a re-chunking, sample real queries from a log, split it into tune and test parts.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(golden_app, name="golden")
