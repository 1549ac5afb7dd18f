"""The shape of the command tree a newcomer sees: a few top-level verbs, the rest in groups.

Each command is registered where ``recallwatch --help`` shows it, by the module of its name
(``cli/ops/monitor.py`` holds ``ops monitor``). A name a command had before it moved into a group
(:data:`OLD_NAMES`) is not in the tree: the root group resolves it to the new place with a
one-line note. Every command's help ends with the exit codes (:data:`EXIT_CODES`), and
:data:`HINTS` answer a user who reaches for the wrong command.
"""

from __future__ import annotations

import typer

__all__ = ["EXIT_CODES", "HINTS", "OLD_NAMES", "add_exit_codes", "hint_for", "old_name_note"]

# The exit codes every command shares, in one place (the root help and each command's help).
EXIT_CODES = ("Exit codes: 0 success or ACCEPT, 1 STOP, alarm or refusal, 2 usage or input "
              "error, 3 internal error (a bug to report), 130 interrupted (Ctrl-C; the message "
              "says what was kept), 141 the output's reader went away before taking all of it "
              "(recallwatch ... | head), as the shell reports a program that SIGPIPE ended.")

# old top-level name -> (group, name in the group): still run, with a note (see old_name_note)
OLD_NAMES: dict[str, tuple[str, str]] = {
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
    "experiments": ("bench", "reference"),
}


def old_name_note(old: str) -> str:
    group, new = OLD_NAMES[old]
    return (f"note: `recallwatch {old}` is now `recallwatch {group} {new}`; the old name keeps "
            "working")


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


def add_exit_codes(app: typer.Typer) -> None:
    """End every command's help with :data:`EXIT_CODES` (after what it says of its own)."""
    for info in app.registered_commands:
        info.epilog = info.epilog or EXIT_CODES
    for group in app.registered_groups:
        if group.typer_instance is not None:
            add_exit_codes(group.typer_instance)
