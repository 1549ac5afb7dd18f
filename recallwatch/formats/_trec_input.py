"""A TREC file's bytes, read within bounds (:func:`read_trec`): what :mod:`recallwatch.formats.trec`
parses.

A TREC file is made of short lines, so it is bounded as line-by-line readers are, whatever its
size: every piece read, from a plain file on disk, a pipe, a device or a gzip stream as it
decompresses, is checked against the line cap of :mod:`recallwatch._files` (16 MB,
``RECALLWATCH_MAX_LINE_MB``), and a longer line is refused, with its number, as soon as it is
read; the cap on files read whole at once (``RECALLWATCH_MAX_FILE_MB``, for YAML and JSON) does
not apply. A plain regular file goes straight into memory Arrow owns (read once, never copied);
gzip is recognised by its first two bytes, not by the file's name.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from os import PathLike
from pathlib import Path
from typing import Literal

import pyarrow as pa

from recallwatch._files import LineLimit, open_input, read_lines_whole
from recallwatch.errors import InputError
from recallwatch.formats.arrow import read_owned

__all__ = ["read_trec"]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


def read_trec(
    path: str | PathLike[str], kind: Literal["qrels", "run"], *, digest: bool = False
) -> tuple[bytes | pa.Buffer, str | None]:
    """The file's bytes (gzip decompressed, a byte-order mark dropped): a plain regular file in
    memory Arrow owns, anything else as ``bytes``; with ``digest``, the sha256 of the bytes as
    stored."""
    source = Path(path)
    with open_input(source, f"a readable TREC {kind} file", gzipped=False) as stream:
        hashed = _Hashed(stream, digest)
        head = stream.peek(2)[:2] if isinstance(stream, io.BufferedReader) else b""
        data: bytes | pa.Buffer | None
        if head == _GZIP_MAGIC:
            data = _gunzip(hashed, source)
        else:
            limit = LineLimit(source)

            def each(piece: bytes) -> None:
                hashed.seen(piece)
                limit.feed(piece)

            data = read_owned(stream, each)
            if data is None:  # a pipe, a device (/dev/zero), or a file that changed as read
                if stream.seekable():
                    stream.seek(0)
                hashed = _Hashed(stream, digest)
                data = read_lines_whole(hashed, source)
    # Editors on Windows prepend a byte-order mark; it would otherwise join the first query id.
    if isinstance(data, pa.Buffer):
        bom = data[: len(_BOM)].to_pybytes() == _BOM
        return (data.slice(len(_BOM)) if bom else data), hashed.hexdigest()
    return (data[len(_BOM):] if data.startswith(_BOM) else data), hashed.hexdigest()


class _Hashed(io.BufferedIOBase):
    """A stream read through, the bytes as stored hashed on the way when a digest is asked."""

    def __init__(self, stream: io.BufferedIOBase, digest: bool) -> None:
        super().__init__()
        self._stream = stream
        self._hasher = hashlib.sha256() if digest else None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        data = self._stream.read(size)
        self.seen(data)
        return data

    def seen(self, data: bytes) -> None:
        if self._hasher is not None:
            self._hasher.update(data)

    def hexdigest(self) -> str | None:
        return None if self._hasher is None else self._hasher.hexdigest()


def _gunzip(stream: io.BufferedIOBase, source: Path) -> bytes:
    """Decompress as a stream: a line that inflates without end is refused at the line cap."""
    try:
        return read_lines_whole(gzip.GzipFile(fileobj=stream), source)
    except InputError as exc:
        if exc.expected != "a complete gzip stream" or not source.is_file():
            raise
        line = _partial_gunzip(source).count(b"\n") + 1  # error path: the file read again
        raise InputError(source=source, line=line, expected="a complete gzip stream",
                         found=exc.found, hint="the data ends or breaks on this line") from None


def _partial_gunzip(source: Path) -> bytes:
    """What a broken gzip file decompresses to before it breaks (error path only)."""
    out: list[bytes] = []
    with gzip.open(source, "rb") as stream:
        try:
            while piece := stream.read1(1 << 16):  # pieces: a break keeps what came before
                out.append(piece)
        except (OSError, EOFError, zlib.error):
            pass
    return b"".join(out)
