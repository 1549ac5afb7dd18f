"""Running a command in the test process: its exit code, standard output and standard error.

``cli`` runs it as a terminal of typer's default width would; ``wide_cli`` as one 200 columns
wide, where a table or a long line is not wrapped. ``untimed`` takes measured times out of an
output, for tests that compare two outputs: no test depends on how fast the machine was.
"""

from __future__ import annotations

import re

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


# "in 0.01s", "p99 1.3 ms", "12.5 ms/query", "1,234 QPS", "(read 0.00s, embed 1.20s …)"
_TIME = re.compile(r"\b\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s?(?:s|ms|µs|us|QPS|qps)\b")


def untimed(text: str) -> str:
    """``text`` with every measured time or rate replaced by ``<time>``."""
    return _TIME.sub("<time>", text)
