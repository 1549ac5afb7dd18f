"""The ``recallwatch`` command line: the only place that turns errors into exit codes.

Exit codes: 0 success / ACCEPT, 1 STOP (or an alarm), 2 usage or input error, 3 internal error,
130 interrupted, 141 the output's reader went away first.
Command modules import nothing heavy at import time, so ``recallwatch --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from recallwatch._process import SIGPIPE_STATUS as _SIGPIPE_STATUS
from recallwatch.cli._tree import (
    EXIT_CODES,
    OLD_NAMES,
    add_exit_codes,
    hint_for,
    new_option_names,
    old_name_note,
)
from recallwatch.errors import Interrupted, RecallwatchError

__all__ = ["app", "main"]


class _Group(TyperGroup):
    """Turns recallwatch errors into one ``Error:`` line and exit code 2, never a traceback; and
    writes everything a command prints with control characters shown, never obeyed, and no
    secret (:mod:`recallwatch._terminal`)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from recallwatch._progress import shown_on_terminal
        from recallwatch._terminal import shown_streams
        from recallwatch.cli._coerce import install

        install(self)  # parameter values without pydantic where typer only hands them through

        given = (list(kwargs.pop("args")) if kwargs.get("args") is not None
                 else list(args[0]) if args else sys.argv[1:])
        args = args[1:]
        given, notes = new_option_names(given)  # an option's older spelling, with a note
        _remember_typed_secrets(given)
        for note in notes:
            _say(note)
        kwargs["args"] = given
        # click.echo would strip ESC [ … sequences from text going to a file or a pipe,
        # changing an id; here every control character is shown instead, on every stream
        kwargs.setdefault("color", True)
        # long work (embedding, searching, reading a large file…) shows its progress on a
        # terminal's stderr, never in a pipe nor beside machine-readable output
        with shown_streams(), shown_on_terminal(not _machine_output(given)):
            try:
                return super().main(*args, **kwargs)
            except SystemExit as done:
                # click and rich turn a broken pipe into exit 1 (after the command or around
                # it): the reader went away, which has its own code
                if _broken_pipe(done):
                    _drop_stdout()
                    raise SystemExit(SIGPIPE_STATUS) from None
                raise
            except BrokenPipeError:  # while click wrote a usage error or the help
                _drop_stdout()
                raise SystemExit(SIGPIPE_STATUS) from None

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """A command by name; a name it had before it moved into a group (:data:`OLD_NAMES`)
        runs the command at its new place, with a note on stderr."""
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in OLD_NAMES:
            group_name, new = OLD_NAMES[cmd_name]
            group = super().get_command(ctx, group_name)
            if group is not None:
                _say(old_name_note(cmd_name))
                return group.get_command(ctx, new)  # type: ignore[attr-defined]
        return command

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Interrupted as exc:
            _say(f"Error: {exc}")
            ctx.exit(INTERRUPTED_STATUS)
        except RecallwatchError as exc:
            _say(f"Error: {exc}")
            ctx.exit(2)
        except KeyboardInterrupt:
            _say("Error: interrupted before the command completed; nothing was reported, and "
                 "nothing was recorded as complete")
            ctx.exit(INTERRUPTED_STATUS)
        except BrokenPipeError:
            # whoever read the output has gone (`recallwatch ... | head`): end quietly, with the
            # status of a program ended by SIGPIPE, and write nothing more there
            _drop_stdout()
            ctx.exit(SIGPIPE_STATUS)
        except SystemExit as done:
            if _broken_pipe(done):  # rich: "broken pipe" becomes SystemExit(1)
                _drop_stdout()
                ctx.exit(SIGPIPE_STATUS)
            raise
        except Exception as exc:
            if type(exc).__module__.startswith(("click.", "typer.")):
                _add_hint(exc)
                raise  # exits, usage errors and aborts: the framework reports them
            # anything else is an internal bug: one line for the user, the trace on request
            if os.environ.get("RECALLWATCH_DEBUG"):
                raise
            _say(f"Internal error: {type(exc).__name__}: {exc} "
                 "(set RECALLWATCH_DEBUG=1 for the traceback, and please report it)")
            ctx.exit(3)


def _add_hint(exc: Exception) -> None:
    """A usage error where a user reached for the wrong command says which one they want.
    (Duck-typed: typer may raise the usage errors of its own copy of click.)"""
    ctx, message = getattr(exc, "ctx", None), getattr(exc, "message", None)
    if ctx is None or not isinstance(message, str):
        return
    no_such = type(exc).__name__ == "NoSuchOption"
    given = (getattr(exc, "option_name", None) if no_such
             else "ARGUMENT" if "unexpected extra argument" in message else None)
    hint = hint_for(ctx.info_name, given)
    if hint is not None:
        exc.message = f"{message}: {hint}"  # type: ignore[attr-defined]
        if no_such:
            exc.possibilities = []  # type: ignore[attr-defined]


# The exit status when the output's reader has gone, as the shell reports a program that
# SIGPIPE ended (128 + 13), and when the user interrupted the command (128 + SIGINT).
SIGPIPE_STATUS = _SIGPIPE_STATUS
INTERRUPTED_STATUS = 130


def _say(line: str) -> None:
    """One line on stderr; nothing when no one reads it any more."""
    with contextlib.suppress(BrokenPipeError, ValueError):
        typer.echo(line, err=True)


def _broken_pipe(done: BaseException) -> bool:
    """Whether ``done`` (an exit) was raised while a broken pipe was being handled."""
    cause = done.__context__
    while cause is not None:
        if isinstance(cause, BrokenPipeError) or (
                isinstance(cause, OSError) and cause.errno == errno.EPIPE):
            return True
        cause = cause.__context__
    return False


# --format values that a program reads: no progress display beside them, even on a terminal
_MACHINE_FORMATS = frozenset({"json", "jsonl", "tsv"})


def _machine_output(args: list[str]) -> bool:
    """Whether the command line asks for machine-readable output (``--format json``)."""
    for i, arg in enumerate(args):
        value = (arg.partition("=")[2] if arg.startswith("--format=")
                 else args[i + 1] if arg == "--format" and i + 1 < len(args) else None)
        if value in _MACHINE_FORMATS:
            return True
    return False


def _remember_typed_secrets(args: list[str]) -> None:
    """The password of every URI on the command line is never printed, whatever else happens
    to it (a parse error, an engine's message): see recallwatch._redact.scrub."""
    from recallwatch._redact import forget, password_span, remember

    forget()
    for arg in args:
        for text in (arg, arg.partition("=")[2]):
            span = password_span(text)
            if span is not None:
                remember(text[span[0]:span[1]])


def _drop_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file behind stdout (an embedding program)
        pass


# One sentence per word the commands use, so their help can be read without other documents.
_HELP = """Does your vector search still find what it must? Acceptance gate, rank metrics, ANN
benchmarks and index operations.

\b
Words used in the commands:
  golden set: queries, each with the chunks it must find in its top K.
  Gold chunk: a curated synthesis that must never be missed.
  policy: the gate's thresholds, in a YAML file (defaults without one).
  noise ceiling: the share of a query's top K allowed to score below the
    worst-scoring chunk it expects.
  waiver: a written diagnosis, in the policy, that excuses a failing query.
  probe set: queries whose live results are compared with exact search.

Start with `recallwatch init`. Operations on a live index are under `recallwatch ops`.

""" + EXIT_CODES + "\n"

# -h as well as --help, on every command
_CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    cls=_Group,
    name="recallwatch",
    help=_HELP,
    context_settings=_CONTEXT,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)

# The command tree, in the order of --help: each name is a module (a top-level command) or a
# package (a group, whose modules hold its commands), and defines register(app). Nothing heavy
# is imported at import time. A listed module that fails to import fails every command, loudly,
# rather than vanishing from --help.
_COMMAND_MODULES = (
    "init",  # the first command of a newcomer: templates, a corpus check, what to run next
    "gate",
    "eval",
    "compare",
    "experiment",
    "ingest",
    "history",
    "golden",
    "label",
    "bench",
    "ops",
    "online",
)


def _register_commands(target: typer.Typer, modules: tuple[str, ...] = _COMMAND_MODULES) -> None:
    for name in modules:
        importlib.import_module(f"{__name__}.{name}").register(target)


_register_commands(app)
add_exit_codes(app)


def _print_version(value: bool) -> None:
    if value:
        from recallwatch import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", "-V", help="Print the version and exit.", callback=_print_version,
        is_eager=True)] = False,
) -> None:
    """Does your vector search still find what it must?"""


def _app_for(args: list[str]) -> typer.Typer:
    """``app`` with only the command (or group) that ``args`` names. Before it runs a command,
    typer reads the signature of every command the app holds (0.06 s for all of them); the one
    named is enough. The whole app when ``args`` names none (``--help``, ``--version``, a
    typo), so every listing and suggestion is the full one."""
    name = args[0] if args else ""
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    one = typer.Typer(cls=_Group, name="recallwatch", help=_HELP, no_args_is_help=True,
                      pretty_exceptions_enable=False, add_completion=False,
                      rich_markup_mode=None, context_settings=_CONTEXT)
    one.registered_callback = app.registered_callback
    one.registered_commands, one.registered_groups = commands, groups
    return one


def main() -> None:
    """The console script. It starts light and leaves as soon as the command is done
    (:mod:`recallwatch._process`): the exit code and the output are the same."""
    from recallwatch._process import leave, mark_command_line

    mark_command_line()
    try:
        code = _app_for(sys.argv[1:])()
    except SystemExit as done:
        code = done.code
    leave(code)
