"""Every command the README shows works as written after `make demo`.

The README's ```sh and ```python blocks are read as a user reads them. Under "Try it on the
example" every step runs, in order, in a copy of the state `make demo` leaves (examples/demo.sh run
in a temporary directory), and its exit code is the one its comment documents ("exit N"); a quoted
message in that comment must appear in the output, and so must the comment of a ``print(...)``.
The other sections' commands need the user's own files or set up this very state: they are checked
to parse (the command and every option exist, the values have the right types), and the few not
run are listed below with the reason.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main

from recallwatch.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RUN_SECTION = "Try it on the example, after `make demo`"
BIN = Path(sys.executable).parent  # the virtualenv's bin directory: `recallwatch` is there
Demo = tuple[Path, dict[str, str]]  # the folder after `make demo`, and the shell's environment

# Commands shown but never run here, with the reason.
NOT_RUN = {
    "make demo": "it makes the state the other commands run on (CI runs it first: .ci/run)",
    "make test": "it runs this test",
    ". .venv/bin/activate": "this test puts the virtualenv's bin directory on PATH instead",
    "recallwatch ops serve --history demo-out/history.db":
        "a server that runs until Ctrl+C (tests/web tests the dashboard)",
}


@dataclass(frozen=True)
class Step:
    kind: str  # "sh" or "python"
    text: str  # as written (a shell command with its continuation lines)
    comment: str  # the comment lines just above a command, and its trailing comment
    section: str
    line: int

    @property
    def words(self) -> list[str]:
        joined = self.text.replace("\\\n", " ")  # a line continuation, as the shell reads it
        return shlex.split(joined, comments=True) if self.kind == "sh" else []

    @property
    def key(self) -> str:
        return " ".join(self.words)

    @property
    def exit_code(self) -> int | None:
        found = re.search(r"\bexit (\d+)\b", self.comment)
        return int(found.group(1)) if found else None


def readme_steps(markdown: str) -> list[Step]:
    steps: list[Step] = []
    section, block, comment = "", None, []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if block is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.strip() in ("```sh", "```python"):
                block, start, body, comment = line.strip()[3:], i + 1, [], []
            continue
        if line.strip() == "```":
            if block == "python":
                steps.append(Step("python", "\n".join(body) + "\n", "", section, start))
            block = None
        elif block == "python":
            body.append(line)
        elif line.lstrip().startswith("#"):
            comment.append(line.strip().lstrip("#").strip())
        elif line.strip():
            first, text = i, line
            while text.endswith("\\") and i < len(lines):
                text += "\n" + lines[i]
                i += 1
            trailing = text.split(" # ", 1)[1] if " # " in text else ""
            steps.append(Step("sh", text, " ".join([*comment, trailing]), section, first))
            comment = []
    return steps


STEPS = readme_steps(README.read_text(encoding="utf-8"))


def parse_cli(words: list[str]) -> None:
    """Parse a `recallwatch …` command line without running it (click raises on a bad one)."""
    command: Any = typer.main.get_command(app)
    args, name, parent = words[1:], words[0], None
    while hasattr(command, "resolve_command"):  # a group: parsed as the command line parses it
        parent = command.make_context(name, list(args), parent=parent)
        rest = [*parent._protected_args, *parent.args]
        if not rest:
            raise ValueError(f"{' '.join(words)}: no subcommand")
        name, command, args = command.resolve_command(parent, rest)
    command.make_context(name, list(args), parent=parent)


def test_steps_are_read_as_a_shell_reads_them() -> None:
    steps = readme_steps('## A\n```sh\n# does x\n# (exit 2: "a … b")\nrecallwatch gate g.yaml \\\n'
                         '    --policy "p q.yaml"\nmake demo   # sets up\n```\n'
                         '```python\nprint(1)  # 1\n```\n')
    gate, make, script = steps
    assert (gate.words, gate.exit_code, gate.line) == (
        ["recallwatch", "gate", "g.yaml", "--policy", "p q.yaml"], 2, 5)
    assert _promised(gate) == ["a", "b"]
    assert (make.key, make.exit_code, make.section) == ("make demo", None, "A")
    assert (script.kind, _promised(script)) == ("python", ["1"])


def test_the_readme_has_the_sections_this_test_reads() -> None:
    sections = {s.section for s in STEPS}
    assert {RUN_SECTION, "On your own data", "Two commands"} <= sections
    assert sum(s.section == RUN_SECTION for s in STEPS) >= 15


def test_every_command_not_run_is_in_the_readme_with_a_reason() -> None:
    shown = {s.key for s in STEPS if s.kind == "sh"}
    assert set(NOT_RUN) <= shown, f"stale entries: {set(NOT_RUN) - shown}"
    for step in STEPS:
        if step.kind == "sh" and step.key not in NOT_RUN:
            assert step.words[0] == "recallwatch", f"README.md:{step.line}: {step.text!r} is " \
                "neither a recallwatch command nor listed in NOT_RUN with the reason"


def test_every_command_run_documents_its_exit_code() -> None:
    for step in STEPS:
        if step.kind == "sh" and step.section == RUN_SECTION and step.key not in NOT_RUN:
            assert step.exit_code is not None, f"README.md:{step.line}: no 'exit N' in the " \
                f"comment above {step.text!r}"


@pytest.mark.parametrize("step", [s for s in STEPS if s.words[:1] == ["recallwatch"]],
                         ids=lambda s: f"README.md:{s.line}")
def test_every_recallwatch_command_parses(step: Step) -> None:
    parse_cli(step.words)


@pytest.mark.parametrize("step", [s for s in STEPS if s.kind == "python"],
                         ids=lambda s: f"README.md:{s.line}")
def test_every_python_block_compiles(step: Step) -> None:
    compile(step.text, f"README.md:{step.line}", "exec")


# -- running them ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def after_make_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """A folder in the state `make demo` leaves a checkout in: examples/ and a fresh demo-out/."""
    home = tmp_path_factory.mktemp("after demo")  # a space in the path, as a user may have
    (home / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "200", "RW": str(BIN / "recallwatch")}
    demo = subprocess.run(["bash", str(home / "examples" / "demo.sh")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    yield home, env


def _run(step: Step, home: Path, env: dict[str, str], n: int) -> tuple[int, str]:
    if step.kind == "sh":
        argv = ["bash", "-c", step.text]
    elif re.search(r"^def test_", step.text, re.MULTILINE):
        script = home / f"test_readme_block_{n}.py"
        script.write_text(step.text, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", script.name]
    else:
        script = home / f"readme_block_{n}.py"
        script.write_text(step.text, encoding="utf-8")
        argv = [sys.executable, script.name]
    done = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


def _promised(step: Step) -> list[str]:
    """What the README says the output holds: quoted text in a command's comment (split at the
    ellipses that stand for the rest), a print's trailing comment."""
    if step.kind == "sh":
        quoted = re.findall(r'"([^"]+)"', step.comment)
        return [part.strip() for q in quoted for part in q.split("…") if part.strip()]
    return [m.strip() for m in re.findall(r"^\s*print\(.*\)\s+#\s*(.+)$", step.text, re.MULTILINE)]


@pytest.mark.slow
def test_every_command_of_try_it_works_as_written_after_make_demo(
        after_make_demo: Demo) -> None:
    home, env = after_make_demo
    failures = []
    ran = 0
    for n, step in enumerate(STEPS):
        if step.section != RUN_SECTION or step.key in NOT_RUN:
            continue
        ran += 1
        code, output = _run(step, home, env, n)
        expected = step.exit_code if step.kind == "sh" else 0
        flat = " ".join(output.split())
        missing = [p for p in _promised(step) if " ".join(p.split()) not in flat]
        if code != expected or missing:
            failures.append(f"README.md:{step.line}: {step.text.strip()[:200]}\n  exit {code}, "
                            f"documented {expected}; not in the output: {missing}\n"
                            f"  output: {output[-1500:]}")
    assert ran >= 15
    assert not failures, "\n\n".join(failures)
