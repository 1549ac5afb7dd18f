"""Hostile values against `recallwatch experiment` (its --out folder, its cache, its plan), in the
style of tests/cli/test_hostile.py: every one is refused with exit 2 and one located ``Error:``
line, never an internal error or a traceback.

A BM25 plan on part of the example knowledge base: each case runs in well under a second."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan

Case = Callable[[Path], tuple[list[str], str]]  # folder -> (arguments, the error's start)


def _plan(d: Path, *variants: str) -> str:
    return str(write_plan(d, "{name: bm25, retrieval: bm25}", list(variants)))


def _file(d: Path, name: str) -> Path:
    (d / name).write_text("not a folder\n", encoding="utf-8")
    return d / name


def _out_with(d: Path, name: str, make: Callable[[Path], object]) -> str:
    out = d / "out"
    out.mkdir(exist_ok=True)
    make(out / name)
    return str(out)


CASES: dict[str, Case] = {
    "--out is a file": lambda d: (
        ["experiment", _plan(d), "--out-dir", str(_file(d, "taken"))],
        f"Error: the experiment's output folder {d / 'taken'} is a file, not a folder"),
    "--out under a file": lambda d: (
        ["experiment", _plan(d), "--out-dir", str(_file(d, "taken") / "out")],
        f"Error: cannot create the experiment's output folder {d / 'taken' / 'out'}: "),
    "--out name too long": lambda d: (
        ["experiment", _plan(d), "--out-dir", str(d / ("x" * 300))],
        f"Error: cannot create the experiment's output folder {d / ('x' * 300)}: "
        "File name too long"),
    "--out not UTF-8": lambda d: (
        ["experiment", _plan(d), "--out-dir", str(d / "bad\udcffname")],
        "Error: the experiment's output folder "),
    "--out/results.json is a folder": lambda d: (
        ["experiment", _plan(d), "--out-dir", _out_with(d, "results.json", Path.mkdir)],
        f"Error: {d / 'out' / 'results.json'} is not a file: the experiment writes its "
        "results there"),
    "--out/report.html is a folder": lambda d: (
        ["experiment", _plan(d), "--out-dir", _out_with(d, "report.html", Path.mkdir)],
        f"Error: {d / 'out' / 'report.html'} is not a file"),
    "--out/cache is a file": lambda d: (
        ["experiment", _plan(d), "--out-dir", _out_with(d, "cache", lambda p: p.write_text("x"))],
        f"Error: {d / 'out' / 'cache'} is not a folder: the experiment writes its cache there"),
    "--out lock is a folder": lambda d: (
        ["experiment", _plan(d), "--out-dir", _out_with(d, ".experiment.lock", Path.mkdir)],
        f"Error: cannot lock the experiment's output folder {d / 'out'}: Is a directory"),
    "--out/results.json is not JSON": lambda d: (
        ["experiment", _plan(d), "--out-dir",
         _out_with(d, "results.json", lambda p: p.write_bytes(b"\xff\x00garbage"))],
        f"Error: {d / 'out' / 'results.json'} is not the results of an experiment"),
    "unknown embedder on a BM25 variant": lambda d: (
        ["experiment", _plan(d, "{name: v, embedder: no-such-model}"), "--out-dir", str(d / "o")],
        f"Error: {d / 'plan.yaml'}:6: record 'v': field 'embedder': expected an embedder name"),
    "embedder spec that is only options": lambda d: (
        ["experiment", _plan(d, "{name: v, embedder: '?path=x'}"), "--out-dir", str(d / "o")],
        f"Error: {d / 'plan.yaml'}:6: record 'v': field 'embedder': expected an embedder name"),
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kb")
    small_kb(folder)
    return folder


@pytest.mark.parametrize("case", CASES)
def test_hostile_experiment_input_is_a_located_error(case: str, kb: Path,
                                                     tmp_path: Path) -> None:
    for f in kb.iterdir():
        shutil.copy(f, tmp_path / f.name)
    args, start = CASES[case](tmp_path)
    code, out, err = cli(*args)
    assert "Internal error" not in err and "Traceback" not in err + out, err
    assert code == 2, (out, err)
    assert err.startswith(start) and err.count("\n") == 1, err
