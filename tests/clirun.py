"""Running a command in the test process: its exit code, standard output and standard error.

``cli`` runs it as a terminal of typer's default width would; ``wide_cli`` as one 200 columns
wide, where a table or a long line is not wrapped.
"""

from __future__ import annotations

from typer.testing import CliRunner

from recallwatch.cli import app

_RUNNER = CliRunner()
_WIDE = CliRunner(env={"COLUMNS": "200"})


def cli(*args: str) -> tuple[int, str, str]:
    r = _RUNNER.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def wide_cli(*args: str) -> tuple[int, str, str]:
    r = _WIDE.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr
