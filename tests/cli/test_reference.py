"""The docs and the README stay true to the commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.cli._reference import cli_reference

ROOT = Path(__file__).resolve().parents[2]


def test_cli_reference_is_generated_from_the_code() -> None:
    committed = (ROOT / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    assert committed == cli_reference(), (
        "docs/cli-reference.md is out of date: "
        "python -m recallwatch.cli._reference > docs/cli-reference.md")


def _readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:sh|bash)?\n(.*?)```", text, flags=re.S)
    commands = []
    for block in blocks:
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("recallwatch "):
                words = [w for w in line.split()[1:3] if re.fullmatch(r"[a-z][a-z-]*", w)]
                commands.append(words[:2])
    return commands


@pytest.mark.parametrize("words", _readme_commands(), ids=" ".join)
def test_every_command_in_the_readme_exists(words: list[str]) -> None:
    r = CliRunner().invoke(app, [*words, "--help"])
    if r.exit_code != 0 and len(words) == 2:  # the second word is an argument, not a subcommand
        r = CliRunner().invoke(app, [words[0], "--help"])
    assert r.exit_code == 0, r.output


def test_readme_starts_with_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:20]
    assert any("make demo" in line for line in head) and any("make test" in line for line in head)
