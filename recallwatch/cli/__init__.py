"""The ``recallwatch`` command line: the only place that turns errors into exit codes.

Exit codes: 0 success / ACCEPT, 1 STOP (or an alarm), 2 usage or input error, 3 internal error.
Command modules import nothing heavy at import time, so ``recallwatch --help`` stays fast.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from recallwatch.errors import RecallwatchError

__all__ = ["app", "main"]


class _Group(TyperGroup):
    """Turns recallwatch errors into one ``Error:`` line and exit code 2, never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except RecallwatchError as exc:
            typer.echo(f"Error: {exc}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:
            typer.echo("Error: interrupted; no partial result was reported or recorded", err=True)
            ctx.exit(130)
        except Exception as exc:
            if type(exc).__module__.startswith(("click.", "typer.")):
                raise  # exits, usage errors and aborts: the framework reports them
            # anything else is an internal bug: one line for the user, the trace on request
            if os.environ.get("RECALLWATCH_DEBUG"):
                raise
            typer.echo(
                f"Internal error: {type(exc).__name__}: {exc} "
                "(set RECALLWATCH_DEBUG=1 for the traceback, and please report it)",
                err=True,
            )
            ctx.exit(3)


app = typer.Typer(
    cls=_Group,
    name="recallwatch",
    help="Does your vector search still find what it must? Acceptance gate, rank metrics, "
    "ANN benchmarks and index operations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)

# Each module defines register(app). Listed here so that the order of --help is deliberate.
_COMMAND_MODULES = [
    "gate_cmd",
    "eval_cmd",
    "compare_cmd",
    "ingest_cmd",
    "history_cmd",
    "history_copy_cmd",  # adds `history copy` to the group history_cmd registers
    "bench_cmd",
    "ops_cmd",
    "serve_cmd",
]

for _name in _COMMAND_MODULES:
    try:
        _module = importlib.import_module(f"recallwatch.cli.{_name}")
    except ModuleNotFoundError as _exc:  # a command family not built yet
        if _exc.name != f"recallwatch.cli.{_name}":
            raise
        continue
    _module.register(app)


def _print_version(value: bool) -> None:
    if value:
        from recallwatch import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """Does your vector search still find what it must?"""


def main() -> None:
    sys.exit(app())
