"""A run file's records a piece at a time, whatever its format: a TREC text run (plain or gzip)
or a Parquet or Arrow IPC run, each by the rules :meth:`Run.read` reads it whole with.

A TREC run is read in pieces of about ``block_bytes`` of text
(:mod:`recallwatch.formats.trec_blocks`); a Parquet run by record batches, an Arrow run a record
batch (as written) at a time, both cut to at most :func:`block_rows` rows, each checked by the
column rules of :meth:`Run.from_table` (columns ``qid``, ``docid``, ``score``). Anything these
pieces cannot settle (a line or a value the reading refuses, a file that cannot be opened)
raises :class:`NotStreamable`: reading the file whole then says where and what, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike
from pathlib import Path

from recallwatch.errors import InputError
from recallwatch.formats.trec import TrecTable
from recallwatch.formats.trec_blocks import NotStreamable, run_pieces
from recallwatch.metrics._tables import COLUMNAR, columnar_batches, columns, floats

__all__ = ["BYTES_PER_ROW", "block_rows", "run_file_pieces"]

BYTES_PER_ROW = 32  # about one TREC run line of text: a block of columns holds as many rows


def block_rows(block_bytes: int) -> int:
    """The rows of a block of columns that stands for ``block_bytes`` of run text."""
    return max(1, block_bytes // BYTES_PER_ROW)


def run_file_pieces(path: str | PathLike[str], block_bytes: int) -> Iterator[TrecTable]:
    """The run file's records in file order, a piece at a time (a query's records may span two
    pieces)."""
    suffix = Path(path).suffix.lower()
    if suffix in COLUMNAR:
        return _columnar(Path(path), suffix, block_rows(block_bytes))
    return run_pieces(path, block_bytes=block_bytes)


def _columnar(path: Path, suffix: str, rows: int) -> Iterator[TrecTable]:
    source = str(path)
    try:
        for table in columnar_batches(path, suffix, rows):
            qids, docids, values = columns(table, "qid", "docid", "score", source=source)
            yield TrecTable(qids, docids, floats(values, "score", source), source)
    except InputError:
        raise NotStreamable("a file or value this reading refuses") from None
