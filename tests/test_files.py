"""Atomic writes (recallwatch._files) and the writers built on them: whole files, whole
directories, and the permissions the umask asks for."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from recallwatch._files import atomic_dir, atomic_path, write_atomic
from recallwatch.acceptance.gate import run_gate
from recallwatch.formats.golden import GoldenSet
from recallwatch.ops.probes import ProbeSet, write_probes
from recallwatch.report import REPORT_FILES, write_report_set
from recallwatch.stores._meta import MetaFile
from tests.acceptance.helpers import golden, ranked


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o022, 0o077], ids=["umask022", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[tuple[int, int]]:
    """Sets the process umask; yields the modes a new file and a new directory must get."""
    old = os.umask(request.param)
    try:
        yield 0o666 & ~request.param, 0o777 & ~request.param
    finally:
        os.umask(old)


def _result() -> object:
    g: GoldenSet = golden({"id": "q1", "text": "t", "expected": ["a"]})
    return run_gate(g, results={"q1": ranked({"a": 1})})


def test_every_writer_respects_the_umask(tmp_path: Path, umask: tuple[int, int]) -> None:
    file_mode, dir_mode = umask
    write_atomic(tmp_path / "a.txt", "x")
    with atomic_path(tmp_path / "b.bin") as tmp, open(tmp, "wb") as fh:
        fh.write(b"y")
    MetaFile(tmp_path / "store" / "t.meta.json").set("k", "v")
    write_probes(ProbeSet("p", "1", ("hola",)), tmp_path / "probes.json")
    write_report_set(_result(), tmp_path / "rep")  # type: ignore[arg-type]
    for name in ("a.txt", "b.bin", "store/t.meta.json", "probes.json",
                 *(f"rep/{n}" for n in REPORT_FILES)):
        assert _mode(tmp_path / name) == file_mode, name
    assert _mode(tmp_path / "rep") == dir_mode


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_atomic(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_atomic_dir_replaces_a_directory_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "set"
    with atomic_dir(target) as tmp:
        write_atomic(tmp / "one", "1")
    assert sorted(p.name for p in target.iterdir()) == ["one"]
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        write_atomic(tmp / "two", "2")
        raise RuntimeError("killed")
    assert sorted(p.name for p in target.iterdir()) == ["one"]
    with atomic_dir(target) as tmp:
        write_atomic(tmp / "three", "3")
    assert sorted(p.name for p in target.iterdir()) == ["three"]
    assert [p.name for p in tmp_path.iterdir()] == ["set"]  # nothing left beside it


def test_atomic_dir_follows_a_symlink_to_the_directory(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with atomic_dir(tmp_path / "link") as tmp:
        write_atomic(tmp / "f", "x")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "real" / "f").read_text() == "x"


def test_write_atomic_writes_text_as_utf8(tmp_path: Path) -> None:
    write_atomic(tmp_path / "t.json", json.dumps({"q": "¿Cuántos?"}, ensure_ascii=False))
    assert (tmp_path / "t.json").read_bytes() == '{"q": "¿Cuántos?"}'.encode()
