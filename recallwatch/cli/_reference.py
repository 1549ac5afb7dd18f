"""The command reference (docs/cli-reference.md), generated from the commands themselves, so it
cannot say what the code does not do. Regenerate it with
``python -m recallwatch.cli._reference > docs/cli-reference.md``; a test fails when it drifts."""

from __future__ import annotations

import inspect
from typing import Any

import typer

__all__ = ["cli_reference"]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _help(text: str) -> list[str]:
    """A help text as Markdown: a paragraph click keeps unwrapped (``\\b``) stays as written."""
    out: list[str] = []
    for para in inspect.cleandoc(text).split("\n\n"):
        if para.startswith("\b\n"):
            out += ["```", para[2:], "```", ""]
        else:
            out += [para, ""]
    return out


def _command(path: list[str], cmd: Any, out: list[str]) -> None:
    ctx = typer.Context(cmd, info_name=" ".join(path))
    subcommands = getattr(cmd, "commands", None)
    out.append(f"{'#' * len(path)} `{' '.join(path)}`")
    out.append("")
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out.append(f"```\n{' '.join(path)} {usage}\n```")
    out.append("")
    if cmd.help:
        out += _help(cmd.help)
    if getattr(cmd, "epilog", None):
        out += _help(cmd.epilog)
    rows = [p.get_help_record(ctx) for p in cmd.params if not getattr(p, "hidden", False)]
    rows = [r for r in rows if r is not None]
    if rows:
        out += ["| argument / option | meaning |", "|---|---|"]
        out += [f"| `{_cell(name)}` | {_cell(text)} |" for name, text in rows]
        out.append("")
    if subcommands:
        for name in subcommands:
            _command([*path, name], subcommands[name], out)


def cli_reference() -> str:
    from recallwatch.cli import app

    root = typer.main.get_command(app)
    out = ["# Command reference", "",
           "Generated from the code by `python -m recallwatch.cli._reference`; "
           "do not edit by hand.", "",
           *_help(root.help or "")]
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        _command(["recallwatch", name], cmd, out)
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(cli_reference(), end="")
