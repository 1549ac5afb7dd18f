"""A TREC run file read in blocks of whole queries, so that memory follows the block, not the file.

A run file is usually written one query after another (every line of a query together). Read in
pieces of about ``block_bytes``, each piece cut at its last line break and parsed by the same
rules as :func:`recallwatch.formats.trec.read_run`; the lines of the piece's last query wait for
the next piece, so that every block handed out holds whole queries. Whether the file really is
grouped by query is for the caller to check (a query seen in two blocks).

Anything this reading cannot settle (a line it refuses, a line longer than the line limit, a
broken gzip stream, a file that is not a regular file and so cannot be read twice) raises
:class:`NotStreamable`: the caller then reads the file whole, which locates the error or reads
what the blocks could not.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Iterator
from os import PathLike
from pathlib import Path
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recallwatch._files import line_cap
from recallwatch.formats.arrow import arrow_owned
from recallwatch.formats.trec import TrecKind, TrecTable, parse_lines

__all__ = ["DEFAULT_BLOCK_BYTES", "NotStreamable", "run_blocks", "run_pieces", "trec_pieces",
           "whole_queries"]

DEFAULT_BLOCK_BYTES = 1 << 24  # 16 MB of text: about 500,000 run lines
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_NEWLINE = ord("\n")


class NotStreamable(Exception):
    """The file must be read whole (see the module's docstring); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def run_blocks(
    path: str | PathLike[str], *, block_bytes: int = DEFAULT_BLOCK_BYTES
) -> Iterator[TrecTable]:
    """The run file's records, in blocks that each hold whole queries (when the file is grouped
    by query) and together every record, in file order."""
    return whole_queries(run_pieces(path, block_bytes=block_bytes))


def run_pieces(
    path: str | PathLike[str], *, block_bytes: int = DEFAULT_BLOCK_BYTES
) -> Iterator[TrecTable]:
    """The run file's records in file order, a piece of about ``block_bytes`` of text at a
    time, cut at line breaks only (a query's lines may span two pieces)."""
    return trec_pieces(path, "run", block_bytes=block_bytes)


def trec_pieces(
    path: str | PathLike[str], kind: TrecKind, *, block_bytes: int = DEFAULT_BLOCK_BYTES
) -> Iterator[TrecTable]:
    """A TREC run or qrels file's records (``kind``) in file order, a piece of about
    ``block_bytes`` of text at a time, each parsed by the rules that read the file whole."""
    p = Path(path)
    if not p.is_file():
        raise NotStreamable("not a regular file")
    return _parsed(_pieces(p, block_bytes), kind, str(path))


def _parsed(pieces: Iterator[pa.Buffer], kind: TrecKind, source: str) -> Iterator[TrecTable]:
    for piece in pieces:
        table = parse_lines(piece, kind, source)
        if table is None:
            raise NotStreamable("a line this reading refuses")
        yield table


def whole_queries(tables: Iterable[TrecTable]) -> Iterator[TrecTable]:
    """The records of ``tables`` (pieces of one file, in order) again, cut so that each block
    ends with a whole query: the rows of a piece's last query wait for the next piece."""
    carry: TrecTable | None = None
    for table in tables:
        if carry is not None:
            table = _concat(carry, table)
        if len(table) == 0:
            carry = None
            continue
        cut = _last_query_start(table.query_ids)
        carry = _slice(table, cut, len(table))
        if cut:
            yield _slice(table, 0, cut)
    if carry is not None and len(carry):
        yield carry


def _pieces(path: Path, block_bytes: int) -> Iterator[pa.Buffer]:
    """The file's text (gzip decompressed, a byte-order mark dropped) in pieces of whole lines,
    each read straight into memory Arrow owns (what the parser is handed: no copy on the way).
    A piece lasts until the next is asked for: its memory is read into again (the parser
    copies what it keeps), so the pages are not given back and faulted in anew each time."""
    cap = line_cap()
    with path.open("rb") as raw:
        stream: IO[bytes] = raw
        if raw.read(2) == _GZIP_MAGIC:
            stream = gzip.GzipFile(fileobj=raw)  # type: ignore[assignment]
        raw.seek(0)
        rest = b""  # the unfinished line at the end of the piece before
        first = True
        buffer = pa.allocate_buffer(block_bytes)
        try:
            while True:
                if buffer.size < len(rest) + block_bytes:  # a line longer than a piece
                    buffer = pa.allocate_buffer(len(rest) + block_bytes)
                view = memoryview(buffer).cast("B")[:len(rest) + block_bytes]
                view[:len(rest)] = rest
                read = _fill(stream, view[len(rest):])
                if not read:
                    break
                size = len(rest) + read
                start = 0
                if first:
                    if size < len(_BOM) and read == block_bytes:  # too short to tell yet
                        rest = bytes(view[:size])
                        continue
                    start = len(_BOM) if view[:len(_BOM)] == _BOM else 0
                    first = False
                end = max(_after_last_newline(buffer, size), start)
                rest = bytes(view[end:size])
                if len(rest) > cap:
                    raise NotStreamable("a line longer than the line limit")
                if end > start:
                    yield buffer.slice(start, end - start)
        except (OSError, EOFError, zlib.error) as exc:
            raise NotStreamable(f"the file could not be read in parts ({exc})") from None
    if rest.strip():
        yield arrow_owned(rest + b"\n")


def _fill(stream: IO[bytes], view: memoryview) -> int:
    """Read into ``view`` until it is full or the stream ends; the number of bytes read."""
    done = 0
    while done < len(view):
        n = stream.readinto(view[done:])  # type: ignore[attr-defined]
        if not n:
            break
        done += n
    return done


def _after_last_newline(buffer: pa.Buffer, size: int) -> int:
    """The position just after the last line break in the first ``size`` bytes (0: none),
    looked for from the end (lines are short: the first window usually holds one)."""
    data = np.frombuffer(buffer, dtype=np.uint8, count=size)
    stop, window = size, 1 << 12
    while stop > 0:
        start = max(stop - window, 0)
        found = np.flatnonzero(data[start:stop] == _NEWLINE)
        if len(found):
            return start + int(found[-1]) + 1
        stop, window = start, window * 4
    return 0


def _last_query_start(query_ids: pa.Array) -> int:
    """Row where the block's last run of rows of one query begins, looked for from the end in
    growing windows (a query's rows are few next to a block's). Arrow's kernels only: a boolean
    array's ``to_numpy`` would import pandas."""
    last = query_ids[len(query_ids) - 1]
    stop, window = len(query_ids), 1 << 10
    while stop > 0:
        start = max(stop - window, 0)
        other = pc.indices_nonzero(pc.not_equal(query_ids.slice(start, stop - start), last))
        if len(other):
            return start + int(other[len(other) - 1].as_py()) + 1
        stop, window = start, window * 4
    return 0


def _slice(table: TrecTable, start: int, stop: int) -> TrecTable:
    n = stop - start
    return TrecTable(table.query_ids.slice(start, n), table.doc_ids.slice(start, n),
                     table.values[start:stop], table.source)


def _concat(a: TrecTable, b: TrecTable) -> TrecTable:
    return TrecTable(pa.concat_arrays([a.query_ids, b.query_ids]),
                     pa.concat_arrays([a.doc_ids, b.doc_ids]),
                     np.concatenate([a.values, b.values]), a.source)
