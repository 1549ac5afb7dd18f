"""Parameter values without pydantic (recallwatch.cli._coerce): for every parameter of every
command, and inputs valid and not, the value is typer's own (or the same error, in typer's
words); and a command runs without importing pydantic."""

from __future__ import annotations

import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer.main

from recallwatch.cli import app
from recallwatch.cli._coerce import _commands, install

pytest.importorskip("typer._coercion")

TEXTS = ["1", "0", "-3", "10", "007", "2.5", "1e3", ".5", "inf", "nan", "abc", "", " 4",
         "x", "./x", "x/", "/tmp", "README.md", "examples", "examples/kb/golden.yaml", "-"]


def _outcome(coerce: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        out = coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # the error is part of what must match
        return "error", (type(exc).__name__, str(exc))
    return type(out).__name__, repr(out)  # repr: nan equals nan


def _inputs(param: Any) -> list[Any]:
    annotation = param.type_descriptor.annotation
    inputs: list[Any] = [param.default, *TEXTS]
    choices = getattr(annotation, "__args__", [annotation])
    for kind in choices:
        if isinstance(kind, type) and issubclass(kind, Enum):
            inputs += [m for m in kind] + [str(m.value) for m in kind]
            inputs += [str(m.value).upper() for m in kind]
    if str(annotation).startswith("list"):
        inputs = [("a", "b"), ["1", "x"], (), [param.default], ("./x",), "a"]
    return inputs


def test_every_parameter_coerces_as_typer_does() -> None:
    from typer._coercion import build_runtime_param

    command = typer.main.get_command(app)
    install(command)
    checked = 0
    for each in _commands(command):
        ctx = each.context_class(each, info_name=each.name)
        for param in each.params:
            mine = getattr(param, "_runtime_param", None)
            if mine is None or not hasattr(mine, "kind"):
                continue  # a kind left to typer
            theirs = build_runtime_param(param.type_descriptor)
            for value in _inputs(param):
                got = _outcome(mine.coerce, value, param, ctx)
                want = _outcome(theirs.coerce, value, param, ctx)
                assert got == want, (each.name, param.name, value)
                checked += 1
    assert checked > 1000


def test_a_command_runs_without_pydantic(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.5 t\n")
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('pydantic' in sys.modules))\n"
            "from recallwatch.cli import main\n"
            f"sys.argv = ['recallwatch', 'eval', {str(tmp_path / 'qrels')!r}, "
            f"{str(tmp_path / 'run')!r}, '-m', 'P@10', '--format', 'json']\n"
            "main()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "False"


def test_running_a_command_many_times_in_one_process_wraps_help_once() -> None:
    """Each run installs the plain coercion on the same command objects (tests, notebooks and
    services run the app in one process): the --help option's maker is wrapped once, not once
    per run, which after a thousand runs exceeded Python's recursion limit."""
    from recallwatch.cli._coerce import install

    group = typer.main.get_command(app)
    for _ in range(3):
        install(group)
    def depth(maker: Any) -> int:
        """How many wrappers a command's --help maker sits under."""
        inner = [cell.cell_contents for cell in getattr(maker, "__closure__", None) or ()]
        wrapped = [f for f in inner if callable(f) and getattr(f, "__name__", "") == "made"]
        return 1 + depth(wrapped[0]) if wrapped else int(maker.__name__ == "made")

    commands = [group, *group.commands.values()]
    assert max(depth(c.get_help_option) for c in commands) == 1
