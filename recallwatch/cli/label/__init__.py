"""``recallwatch label …``: judge results by hand (the group; its commands, pool, serve, agree,
export and merge, live in ``judge``; ``answers``, the page to label answers, in ``answers``)."""

from __future__ import annotations

import typer

from recallwatch.cli._common import register_modules

label_app = typer.Typer(
    help="Judge search results by hand: pool the top results of several systems into a "
    "judging queue, grade them in a local browser page, measure agreement between judges; "
    "label a RAG assistant's answers (faithful, relevant, correct) for the gate's answer "
    "judge.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    register_modules(label_app, __name__, ("judge", "answers"))
    app.add_typer(label_app, name="label")
