"""`recallwatch experiment` shows its progress on a terminal — which variant, step n of N, what
it does, the embedding's own bar and the time left once it can be estimated — and nothing of it
in a pipe or with --format json.

The terminal is a real pseudo-terminal (``pty``) given to the command as its stderr
(:mod:`tests.terminal`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.experiment.conftest import small_kb, write_plan
from tests.terminal import run


def _run(args: list[str], folder: Path, *, terminal: bool) -> tuple[int, str, str]:
    return run(args, folder, terminal=terminal)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("progress kb")
    small_kb(folder)
    write_plan(folder, "{name: keyword, retrieval: bm25}", ["{name: dense, retrieval: dense}"])
    return folder


@pytest.fixture(scope="module")
def on_a_terminal(kb: Path) -> tuple[int, str, str]:
    return _run(["experiment", "plan.yaml", "--out-dir", "out"], kb, terminal=True)


def test_on_a_terminal_each_step_is_shown(on_a_terminal: tuple[int, str, str]) -> None:
    code, stdout, stderr = on_a_terminal
    assert code == 0, stderr
    steps = ["experiment, step 1 of 4: chunks of keyword",
             "experiment, step 2 of 4: index of dense (use-multilingual)",
             "experiment, step 3 of 4: judging keyword",
             "experiment, step 4 of 4: judging dense"]
    at = [stderr.find(s) for s in steps]
    assert -1 not in at and at == sorted(at), stderr[-3000:]
    assert "ingesting into lancedb://" in stderr  # the embedding's own bar, under its step
    assert "-:--:--" in stderr  # the time-left column, unknown until steps are done
    assert "Variants on the test queries" in stdout and "experiment, step" not in stdout


def test_in_a_pipe_nothing_but_what_was_written(kb: Path,
                                                on_a_terminal: tuple[int, str, str]) -> None:
    code, stdout, stderr = _run(["experiment", "plan.yaml", "--out-dir", "out"], kb, terminal=False)
    assert code == 0, stderr
    assert stderr == "".join(f"wrote out/{name}\n"
                             for name in ("results.json", "results.md", "report.html"))
    assert "Variants on the test queries" in stdout


def test_with_format_json_the_terminal_shows_no_progress(
        kb: Path, on_a_terminal: tuple[int, str, str]) -> None:
    code, stdout, stderr = _run(["experiment", "plan.yaml", "--out-dir", "out", "--format", "json"],
                                kb, terminal=True)
    assert code == 0, stderr
    assert "experiment, step" not in stderr and "\x1b[" not in stderr
    assert stderr.replace("\r\n", "\n") == "".join(
        f"wrote out/{name}\n" for name in ("results.json", "results.md", "report.html"))
    results = json.loads(stdout)
    saved = json.loads((kb / "out" / "results.json").read_text(encoding="utf-8"))
    assert results == saved
