"""The shape of the command tree a newcomer sees: a few top-level verbs, the rest in groups.

Command modules register their commands where they always did; :func:`regroup` then moves the
operations commands into the ``ops`` group and ``groups`` into ``history``. Each old top-level
name keeps working, hidden from ``--help``, with a one-line note naming its new place. Every
command's help ends with the exit codes (:data:`EXIT_CODES`), and :data:`HINTS` answer a user
who reaches for the wrong command.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

__all__ = ["EXIT_CODES", "HINTS", "MOVES", "add_exit_codes", "hint_for", "regroup"]

# The exit codes every command shares, in one place (the root help and each command's help).
EXIT_CODES = ("Exit codes: 0 success or ACCEPT, 1 STOP, alarm or refusal, 2 usage or input "
              "error, 3 internal error (a bug to report), 130 interrupted (Ctrl-C; the message "
              "says what was kept), 141 the output's reader went away before taking all of it "
              "(recallwatch ... | head), as the shell reports a program that SIGPIPE ended.")

# old top-level name -> (group, name in the group)
MOVES: dict[str, tuple[str, str]] = {
    "probes": ("ops", "probes"),
    "monitor": ("ops", "monitor"),
    "reindex": ("ops", "reindex"),
    "rollback": ("ops", "rollback"),
    "promote": ("ops", "promote"),
    "calibrate-threshold": ("ops", "calibrate-threshold"),
    "calibrate-noise": ("ops", "calibrate-noise"),
    "serve": ("ops", "serve"),
    "groups": ("history", "groups"),
    "quantize": ("bench", "quantize"),
    "plan": ("bench", "plan"),
}
_GROUP_HELP = {
    "ops": "Operate a live index: probe sets, the monitor and its dashboard (serve), reindex "
           "and rollback, promote, the no-result threshold and noise ceiling calibrations.",
}

# (command, unknown option the user gave, or ARGUMENT for an unexpected argument) -> what they
# probably want
HINTS: dict[tuple[str, str], str] = {
    ("compare", "--history"): "to compare runs of the history, use `recallwatch history "
                              "compare`; `recallwatch compare` compares TREC run files",
    ("serve", "ARGUMENT"): "to judge a queue in the browser, use `recallwatch label serve "
                           "QUEUE`; `recallwatch ops serve` is the dashboard",
    ("eval", "--store"): "to run a golden set against an index, use `recallwatch gate GOLDEN "
                         "--store URI`; `recallwatch eval` scores TREC run files",
}


def hint_for(command: str | None, given: str | None) -> str | None:
    if command is None or given is None:
        return None
    return HINTS.get((command, given))


def _noted(old: str, new: str, callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        typer.echo(f"note: `recallwatch {old}` is now `recallwatch {new}`; the old name keeps "
                   "working", err=True)
        return callback(*args, **kwargs)

    return run


def _group(app: typer.Typer, name: str) -> typer.Typer:
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    group = typer.Typer(help=_GROUP_HELP.get(name), no_args_is_help=True)
    app.add_typer(group, name=name)
    return group


def regroup(app: typer.Typer) -> None:
    """Move each command of :data:`MOVES` into its group; its old name stays, hidden."""
    for info in list(app.registered_commands):
        if info.name not in MOVES or info.callback is None:
            continue
        group_name, new = MOVES[info.name]
        group = _group(app, group_name)
        group.command(new, help=info.help, epilog=info.epilog)(info.callback)
        info.callback = _noted(info.name, f"{group_name} {new}", info.callback)
        info.hidden = True


def add_exit_codes(app: typer.Typer) -> None:
    """End every command's help with :data:`EXIT_CODES` (after what it says of its own)."""
    for info in app.registered_commands:
        info.epilog = info.epilog or EXIT_CODES
    for group in app.registered_groups:
        if group.typer_instance is not None:
            add_exit_codes(group.typer_instance)
