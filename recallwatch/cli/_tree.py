"""The shape of the command tree a newcomer sees: a few top-level verbs, the rest in groups.

Each command is registered where ``recallwatch --help`` shows it, by the module of its name
(``cli/ops/monitor.py`` holds ``ops monitor``). A name a command had before it moved into a group
(:data:`OLD_NAMES`) is not in the tree: the root group resolves it to the new place with a
one-line note. Every command's help ends with the exit codes (:data:`EXIT_CODES`), and
:data:`HINTS` answer a user who reaches for the wrong command.
"""

from __future__ import annotations

import typer

__all__ = ["EXIT_CODES", "HINTS", "OLD_NAMES", "OLD_OPTIONS", "add_exit_codes", "hint_for",
           "new_option_names", "old_name_note"]

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


# command path -> {older option spelling: its name now}. One option name means one thing in
# every command (a data version is never --version, the program's; a folder is --out-dir, a
# file --out); the older spellings still work, with a note.
OLD_OPTIONS: dict[tuple[str, ...], dict[str, str]] = {
    ("ops", "probes"): {"--version": "--probe-version"},
    ("ops", "promote"): {"--version": "--index-version"},
    ("golden", "migrate"): {"--version": "--golden-version"},
    ("bench", "quantize"): {"--metric": "--distance", "--out": "--out-dir"},
    ("history", "groups"): {"--metric": "--value"},
    ("bench", "sweep"): {"--out": "--out-dir"},
    ("bench", "filtered"): {"--out": "--out-dir"},
    ("bench", "streaming"): {"--out": "--out-dir"},
    ("bench", "reference"): {"--out": "--out-dir", "--n": "--size"},
    ("experiment",): {"--out": "--out-dir"},
}


def new_option_names(args: list[str]) -> tuple[list[str], list[str]]:
    """``args`` with each older option spelling of :data:`OLD_OPTIONS` replaced by its name
    now, and a note for each one replaced."""
    path = _command_path(args)
    renamed = OLD_OPTIONS.get(path, {})
    if not renamed:
        return args, []
    out, notes = list(args), []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if name in renamed:
            out[i] = renamed[name] + eq + value
            notes.append(f"note: `{name}` of `recallwatch {' '.join(path)}` is now "
                         f"`{renamed[name]}`; the old name keeps working")
    return out, notes


def _command_path(args: list[str]) -> tuple[str, ...]:
    """The command an argument list names, old top-level names and the ``bench SWEEP.yaml``
    shorthand resolved: ``("ops", "probes")``, ``("experiment",)``."""
    words = [a for a in args[:2] if not a.startswith("-")]
    if not words:
        return ()
    if words[0] in OLD_NAMES:
        return OLD_NAMES[words[0]]
    groups = {path[0] for path in OLD_OPTIONS if len(path) == 2}
    if words[0] in groups:
        second = words[1] if len(words) > 1 else ""
        known = {path[1] for path in OLD_OPTIONS if path[0] == words[0]}
        if second in known:
            return (words[0], second)
        return ("bench", "sweep") if words[0] == "bench" and second.endswith(
            (".yaml", ".yml", ".json")) else (words[0], second)
    return (words[0],)


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
