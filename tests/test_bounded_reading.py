"""Reading user files within bounds (recallwatch/_files.py): the line cap and the file cap, each
refused with its place and how to raise it, and large inputs with short lines read whole."""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path

import pytest

from recallwatch._files import (
    FILE_CAP_VARIABLE,
    LINE_CAP_VARIABLE,
    LineLimit,
    capped_lines,
    file_cap,
    line_cap,
    open_input,
    read_capped,
    read_lines_whole,
)
from recallwatch.errors import InputError
from recallwatch.formats.structured import iter_jsonl, text_lines
from recallwatch.formats.trec import read_run

KB = 1 << 10


@pytest.fixture
def small_caps(monkeypatch: pytest.MonkeyPatch) -> int:
    """A line cap of 1 KB and a file cap of 4 KB (the variables take megabytes)."""
    monkeypatch.setenv(LINE_CAP_VARIABLE, str(1 / 1024))
    monkeypatch.setenv(FILE_CAP_VARIABLE, str(4 / 1024))
    assert line_cap() == KB and file_cap() == 4 * KB
    return KB


def test_defaults_and_bad_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LINE_CAP_VARIABLE, raising=False)
    monkeypatch.delenv(FILE_CAP_VARIABLE, raising=False)
    assert line_cap() == 16 << 20 and file_cap() == 128 << 20
    for bad in ("x", "nan", "-1", "0", "inf", "1e300"):
        monkeypatch.setenv(LINE_CAP_VARIABLE, bad)
        assert line_cap() == 16 << 20
    monkeypatch.setenv(LINE_CAP_VARIABLE, "64")
    assert line_cap() == 64 << 20


def test_a_line_at_the_cap_passes_one_byte_more_is_refused(small_caps: int) -> None:
    ok = b"a" * (small_caps - 1) + b"\n"
    assert list(capped_lines(io.BufferedReader(io.BytesIO(ok * 3)), "f")) == [ok] * 3
    last = b"b" * small_caps  # the last line, without a line break, may fill the cap too
    assert list(capped_lines(io.BufferedReader(io.BytesIO(ok + last)), "f")) == [ok, last]
    with pytest.raises(InputError) as err:
        list(capped_lines(io.BufferedReader(io.BytesIO(ok + b"c" * (small_caps + 1))), "f.jsonl"))
    assert str(err.value) == (
        "f.jsonl:2: expected a line of at most 1,024 bytes, found <a longer line: more than "
        "1,024 bytes without a line break> (is it a text file of this kind? set "
        "RECALLWATCH_MAX_LINE_MB to raise the limit)")


def test_whole_files_are_capped(small_caps: int, tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_bytes(b"x" * 4 * small_caps)
    assert read_capped(path, "a file") == b"x" * 4 * small_caps
    path.write_bytes(b"x" * (4 * small_caps + 1))
    with pytest.raises(InputError, match=rf"^{path}: expected a file of at most 4,096 bytes, "
                       rf"found <more than 4,096 bytes> \(set {FILE_CAP_VARIABLE} to raise"):
        read_capped(path, "a file")
    with pytest.raises(InputError, match="expected a file of at most 4,096 bytes"):
        read_capped("/dev/zero", "a file")
    with pytest.raises(InputError, match="expected a file, found <no such file>"):
        read_capped(tmp_path / "none", "a file")
    with pytest.raises(InputError, match="expected a file, found <a directory>"):
        read_capped(tmp_path, "a file")


def test_short_lines_in_any_number_cross_every_piece_boundary(small_caps: int) -> None:
    # 3 MB of lines of every length up to the cap: pieces of 1 MB end mid-line everywhere
    lines = [b"%d " % i + b"z" * (i % (small_caps - 10)) + b"\n" for i in range(7000)]
    data = b"".join(lines)
    assert len(data) > 3 << 20
    assert read_lines_whole(io.BufferedReader(io.BytesIO(data)), "run") == data
    long = data[: (1 << 20) - 5] + b"q" * (small_caps + 1) + b"\n"  # spans the first boundary
    with pytest.raises(InputError, match=r"^run:\d+: expected a line of at most 1,024 bytes"):
        read_lines_whole(io.BufferedReader(io.BytesIO(long)), "run")
    with open_input("/dev/zero", "a file") as zero, pytest.raises(
            InputError, match=r"^zero:1: expected a line of at most"):
        read_lines_whole(zero, "zero")


def test_gzip_is_read_as_a_stream(small_caps: int, tmp_path: Path) -> None:
    bomb = tmp_path / "log.jsonl.gz"
    with gzip.open(bomb, "wb") as fh:
        fh.write(b'{"a": 1}\n' + b" " * (50 * small_caps))
    with pytest.raises(InputError, match=rf"^{bomb}:2: expected a line of at most 1,024"):
        list(text_lines(bomb, gzipped=True))
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"a": 1}\n' * 50)[:-12])
    with pytest.raises(InputError, match=r"expected a complete gzip stream"):
        list(text_lines(cut, gzipped=True))


def test_line_numbers_and_breaks_are_those_of_the_whole_text(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    text = '\ufeff{"a": 1}\r\n\n{"a": 2}\r{"a": 3}\n{"a": 4}'
    path.write_text(text, encoding="utf-8")
    assert list(text_lines(path)) == list(enumerate(text[1:].splitlines(), start=1))
    assert [(o["a"], o["__line__"]) for o in iter_jsonl(path)] == [(1, 1), (2, 3), (3, 4),
                                                                     (4, 5)]


def test_a_trec_run_from_a_pipe_or_gzip_is_capped(small_caps: int, tmp_path: Path) -> None:
    rows = "".join(f"q{i % 50} Q0 d{i} {i} {1 / (i + 1):.6f} t\n" for i in range(20_000))
    gz = tmp_path / "run.gz"
    gz.write_bytes(gzip.compress(rows.encode()))
    assert len(read_run(gz).query_ids) == 20_000
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(rows.encode() + b"x" * (4 * small_caps)))
    with pytest.raises(InputError, match=r"bomb\.gz:20001: expected a line of at most 1,024"):
        read_run(bomb)
    with pytest.raises(InputError, match=r"^/dev/zero:1: expected a line of at most 1,024"):
        read_run("/dev/zero")


def test_a_plain_trec_file_on_disk_is_read_within_the_line_cap(small_caps: int,
                                                                 tmp_path: Path) -> None:
    rows = b"".join(b"q%d Q0 d%d %d 0.5 t\n" % (i % 50, i, i) for i in range(20_000))
    plain = tmp_path / "run"
    plain.write_bytes(rows)
    assert len(rows) > 64 * small_caps  # larger than the whole-file cap: not a file read whole
    assert len(read_run(plain).query_ids) == 20_000
    plain.write_bytes(rows + b"x" * (small_caps + 1) + b"\n" + rows)
    with pytest.raises(InputError, match=rf"^{plain}:20001: expected a line of at most 1,024 "
                       rf"bytes, found <a longer line: .* set {LINE_CAP_VARIABLE} to raise"):
        read_run(plain)


def test_a_sparse_file_is_refused_after_the_cap_not_read_to_its_end(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # 64 GB of NUL bytes that take no disk: refused at 1 MB, never read (nor held) whole
    monkeypatch.setenv(LINE_CAP_VARIABLE, "1")
    sparse = tmp_path / "sparse.run"
    with sparse.open("wb") as fh:
        fh.truncate(64 << 30)
    with pytest.raises(InputError, match=rf"^{sparse}:1: expected a line of at most 1 MB"):
        read_run(sparse)


def test_lines_inside_one_piece_are_checked_when_the_cap_is_smaller(small_caps: int) -> None:
    short = b"a" * (small_caps - 1) + b"\n"
    piece = short * 5 + b"b" * (small_caps + 1) + b"\n" + short
    limit = LineLimit("f")
    limit.feed(short)
    with pytest.raises(InputError, match=r"^f:7: expected a line of at most 1,024 bytes"):
        limit.feed(piece)
    limit = LineLimit("g")
    limit.feed(short * 2000)  # many pieces of short lines, each within the cap
    limit.feed(b"c" * small_caps)
    with pytest.raises(InputError, match=r"^g:2001: expected a line of at most"):
        limit.feed(b"c\n")


def test_the_digest_is_that_of_the_bytes_as_stored(tmp_path: Path) -> None:
    rows = b"\xef\xbb\xbfq1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.25 t\n"
    for name, content in (("run", rows), ("run.gz", gzip.compress(rows))):
        path = tmp_path / name
        path.write_bytes(content)
        table = read_run(path, digest=True)
        assert table.sha256 == hashlib.sha256(content).hexdigest()
        assert table.query_ids.to_pylist() == ["q1", "q1"]  # the byte-order mark dropped
