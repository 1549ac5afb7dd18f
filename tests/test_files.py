"""Atomic writes (recallwatch._files) and the writers built on them: whole files, whole
directories, and the permissions the umask asks for."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from recallwatch._files import (
    atomic_dir,
    atomic_path,
    check_output_dir,
    check_output_file,
    check_writable,
    output_dir,
    write_atomic,
)
from recallwatch.acceptance.gate import run_gate
from recallwatch.errors import InputError
from recallwatch.formats.golden import GoldenSet
from recallwatch.ops.probes import ProbeSet, write_probes
from recallwatch.report import REPORT_FILES, write_report_set
from recallwatch.stores._meta import MetaFile
from tests.acceptance.helpers import golden, ranked
from tests.readonly import read_only


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


def test_a_folder_where_a_file_goes_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(InputError) as refused:
        write_atomic(tmp_path / "out", "x")
    assert str(refused.value) == (f"{tmp_path / 'out'}: expected a file name, found "
                                  "<a directory> (name the file to write, not a folder)")
    with pytest.raises(InputError) as refused:
        check_output_file(tmp_path / "out", "--out", example="golden.yaml")
    assert str(refused.value).endswith("(--out names the file to write, e.g. golden.yaml)")
    (tmp_path / "f").write_text("a file")
    with pytest.raises(InputError) as refused:
        write_atomic(tmp_path / "f" / "x.json", "x")
    assert str(refused.value) == (f"{tmp_path / 'f' / 'x.json'}: expected a path inside a "
                                  f"directory, found <{tmp_path / 'f'} is a file>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "out"]  # nothing left behind


def test_a_file_where_a_folder_goes_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("a file")
    for call in (lambda: output_dir(tmp_path / "f", "--out"),
                 lambda: check_output_dir(tmp_path / "f", "--out")):
        with pytest.raises(InputError) as refused:
            call()
        assert str(refused.value) == (f"{tmp_path / 'f'}: expected a directory, found <a file> "
                                      "(--out names the directory to write the result files "
                                      "into)")
    with pytest.raises(InputError, match="expected a directory, found <a file>"), \
            atomic_dir(tmp_path / "f"):
        pass
    assert output_dir(tmp_path / "new" / "dir") == tmp_path / "new" / "dir"
    assert (tmp_path / "new" / "dir").is_dir()


def test_a_read_only_folder_is_a_located_error_and_nothing_is_left(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    with read_only(folder):
        with pytest.raises(InputError) as refused:
            write_atomic(folder / "a.json", "x")
        assert str(refused.value) == (f"{folder / 'a.json'}: cannot write the file: permission "
                                      "denied (choose a path you may write to)")
        with pytest.raises(InputError) as refused:
            output_dir(folder / "sub")
        assert str(refused.value) == (f"{folder / 'sub'}: cannot write the directory: "
                                      "permission denied (choose a path you may write to)")
        with pytest.raises(InputError) as refused:
            check_writable(folder / "later.jsonl", "--out")
        assert str(refused.value) == (f"{folder / 'later.jsonl'}: cannot write the file: "
                                      "permission denied (choose a path you may write to)")
    assert list(folder.iterdir()) == []
    kept = folder / "kept.jsonl"
    kept.write_text("a line\n")
    check_writable(kept)  # a writable place: nothing changes
    assert kept.read_text() == "a line\n" and sorted(p.name for p in folder.iterdir()) == [
        "kept.jsonl"]
    with read_only(kept), pytest.raises(InputError, match="cannot write the file: permission"):
        check_writable(kept)


def test_a_symbolic_link_is_replaced_never_written_through(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "theirs.yaml"
    target.write_text("theirs")
    link = tmp_path / "golden.yaml"
    link.symlink_to(target)
    write_atomic(link, "ours")
    assert not link.is_symlink() and link.read_text() == "ours"
    assert target.read_text() == "theirs"
    dangling = tmp_path / "policy.yaml"
    dangling.symlink_to(tmp_path / "elsewhere" / "missing.yaml")
    write_atomic(dangling, "ours")
    assert dangling.read_text() == "ours" and not dangling.is_symlink()
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["theirs.yaml"]
