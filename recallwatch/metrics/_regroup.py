"""A run file not grouped by query (a query's records in two places), regrouped through
temporary files so that it is still evaluated in blocks of whole queries, in bounded memory.

A first pass reads the file a piece at a time (:func:`run_file_pieces`) and scatters each
piece's records into K temporary Arrow IPC files by a stable hash of the query id (CRC-32 of its
UTF-8 bytes), so that every record of a query lands in the same file, in file order; K follows
the file's size and the block size, at most :data:`MAX_FILES`. A second pass reads the files
back, several small ones together up to a block's rows, each block holding whole queries. The
files live in one temporary directory (under ``TMPDIR`` when it is set), removed when the
``with`` block ends, whether by an error, Ctrl-C or not.
"""

from __future__ import annotations

import math
import os
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recallwatch._files import starts_as_gzip
from recallwatch.formats.arrow import from_numpy, to_numpy
from recallwatch.formats.trec import TrecTable
from recallwatch.formats.trec_blocks import NotStreamable
from recallwatch.metrics._run_files import block_rows, run_file_pieces
from recallwatch.metrics._tables import COLUMNAR

__all__ = ["MAX_FILES", "NoTemporaryFiles", "Regrouped", "regrouped"]

Array = np.ndarray[Any, Any]

MAX_FILES = 256  # open at once while scattering; past 256 blocks the files grow instead
_COMPRESSED = 6  # a gzip or Parquet run holds about this many times its size in run text
_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("score", pa.float64())])


@dataclass(frozen=True)
class Regrouped:
    """The temporary files of a run regrouped by query, and the rows each holds."""

    files: list[Path]
    rows: list[int]
    block_rows: int
    source: str

    def blocks(self) -> Iterator[TrecTable]:
        """The run's records, in blocks of whole queries: a file, or consecutive small files
        together up to a block's rows; each block's records ordered by query (file order
        within a query)."""
        group: list[Path] = []
        held = 0
        for path, rows in zip(self.files, self.rows, strict=True):
            if group and held + rows > self.block_rows:
                yield self._read(group)
                group, held = [], 0
            if rows:
                group.append(path)
                held += rows
        if group:
            yield self._read(group)

    def _read(self, paths: list[Path]) -> TrecTable:
        batches = []
        for path in paths:
            with pa.OSFile(str(path)) as f:
                batches.extend(pa.ipc.open_file(f).read_all().to_batches())
        table = pa.Table.from_batches(batches, schema=_SCHEMA).combine_chunks()
        qids = table.column("qid").chunk(0)
        # each query's rows together (a stable sort keeps their file order): the evaluation's
        # fast path for rows grouped by query
        order = from_numpy(np.argsort(to_numpy(pc.dictionary_encode(qids).indices),
                                      kind="stable"))
        table = table.take(order)
        return TrecTable(table.column("qid").chunk(0), table.column("docid").chunk(0),
                         to_numpy(table.column("score")), self.source)


class NoTemporaryFiles(NotStreamable):
    """The temporary files could not be written (a missing or full temporary directory)."""


@contextmanager
def regrouped(path: str | PathLike[str], block_bytes: int) -> Iterator[Regrouped]:
    """The run file at ``path`` scattered by query into temporary files, removed on leaving."""
    parts = _file_count(Path(path), block_bytes)
    where = os.environ.get("TMPDIR") or None
    with ExitStack() as stack:
        try:
            tmp = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="recallwatch-regroup-", dir=where))
            files = [Path(tmp) / f"part-{i:03d}.arrow" for i in range(parts)]
            rows = _scatter(run_file_pieces(path, block_bytes), files)
        except (OSError, pa.ArrowException) as exc:
            raise NoTemporaryFiles(f"the temporary files could not be written in "
                                   f"{where or tempfile.gettempdir()} ({exc})") from None
        yield Regrouped(files, rows, block_rows(block_bytes), str(path))


def _file_count(path: Path, block_bytes: int) -> int:
    """K: twice the blocks of run text the file holds (by its size), so that a file rarely
    passes a block; files below a block are read together again."""
    compressed = path.suffix.lower() == ".parquet" or (
        path.suffix.lower() not in COLUMNAR and starts_as_gzip(path))
    text = path.stat().st_size * (_COMPRESSED if compressed else 1)
    return min(MAX_FILES, max(2, math.ceil(2 * text / block_bytes)))


def _scatter(pieces: Iterator[TrecTable], files: list[Path]) -> list[int]:
    """Each piece's records appended to the file of its query; the rows each file got."""
    k = len(files)
    rows = np.zeros(k, dtype=np.int64)
    sinks = [pa.OSFile(str(f), "wb") for f in files]
    writers: list[pa.ipc.RecordBatchFileWriter] = []
    try:
        writers.extend(pa.ipc.new_file(sink, _SCHEMA) for sink in sinks)
        for piece in pieces:
            encoded = pc.dictionary_encode(piece.query_ids)
            hashes = np.fromiter((zlib.crc32(q.encode()) for q in encoded.dictionary.to_pylist()),
                                 dtype=np.int64, count=len(encoded.dictionary))
            where = (hashes % k)[to_numpy(encoded.indices)]
            order = np.argsort(where, kind="stable")  # file order within each temporary file
            counts = np.bincount(where, minlength=k)
            take = from_numpy(order)
            qids, docids = piece.query_ids.take(take), piece.doc_ids.take(take)
            scores = np.ascontiguousarray(piece.values[order], dtype=np.float64)
            start = 0
            for i in np.flatnonzero(counts):
                n = int(counts[i])
                writers[i].write_batch(pa.record_batch(
                    [qids.slice(start, n), docids.slice(start, n),
                     from_numpy(scores[start:start + n])], schema=_SCHEMA))
                start += n
            rows += counts
    finally:
        for writer in writers:
            writer.close()
        for sink in sinks:
            sink.close()
    return [int(n) for n in rows]
