"""A run file not grouped by query (a query's records in two places), regrouped through
temporary files so that it is still evaluated in blocks of whole queries, in bounded memory.

A first pass reads the file a piece at a time (:func:`run_file_pieces`) and scatters each
piece's records into K temporary Arrow IPC files by a stable hash of the query id (CRC-32 of its
UTF-8 bytes), so that every record of a query lands in the same file, in file order; K follows
the file's size and the block size, at most :data:`MAX_FILES`. A second pass reads the files
back, several small ones together up to a block's rows, each block holding whole queries. The
files live in one temporary directory (under ``TMPDIR`` when it is set), removed when the
``with`` block ends, whether by an error, Ctrl-C or not.

A qrels file is scattered the same way (:func:`scatter`), into as many files by the same hash,
when it is too large to be held whole: the judgments of a query then sit in the file of the
same number as its run records (:mod:`recallwatch.metrics._partitioned`).
"""

from __future__ import annotations

import math
import os
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recallwatch._files import starts_as_gzip
from recallwatch.errors import InputError
from recallwatch.formats.arrow import from_numpy, to_numpy
from recallwatch.formats.trec import TrecKind, TrecTable
from recallwatch.formats.trec_blocks import NotStreamable
from recallwatch.metrics._run_files import block_rows, run_file_pieces
from recallwatch.metrics._tables import COLUMNAR

__all__ = ["MAX_FILES", "NoTemporaryFiles", "Regrouped", "Scattered", "file_count", "groups",
           "regrouped", "scatter", "temporary_folder", "text_bytes"]

Array = np.ndarray[Any, Any]

MAX_FILES = 256  # open at once while scattering; past 256 blocks the files grow instead
_COMPRESSED = 6  # a gzip or Parquet file holds about this many times its size in text
_SCHEMAS = {
    "run": pa.schema([("qid", pa.string()), ("docid", pa.string()), ("score", pa.float64())]),
    "qrels": pa.schema([("qid", pa.string()), ("docid", pa.string()), ("grade", pa.int64())]),
}


@dataclass(frozen=True)
class Scattered:
    """The temporary files of a run or qrels file scattered by query, and the rows each holds:
    file ``i`` holds every record of the queries whose hash is ``i`` modulo the file count."""

    files: list[Path]
    rows: list[int]
    kind: TrecKind
    source: str

    def read(self, numbers: list[int]) -> TrecTable:
        """The records of the files ``numbers`` (that hold some), each query's rows together
        (in file order)."""
        schema = _SCHEMAS[self.kind]
        batches = []
        for path in (self.files[i] for i in numbers):
            try:
                with pa.OSFile(str(path)) as f:
                    batches.extend(pa.ipc.open_file(f).read_all().to_batches())
            except (OSError, pa.ArrowException) as exc:
                raise InputError(
                    f"the temporary copy of {self.source} could not be read back ({exc})",
                    source=path, hint="something removed or changed the temporary folder during "
                    "the run: set TMPDIR to a folder of your own") from None
        table = pa.Table.from_batches(batches, schema=schema).combine_chunks()
        qids = table.column("qid").chunk(0)
        # each query's rows together (a stable sort keeps their file order): the evaluation's
        # fast path for rows grouped by query
        order = from_numpy(np.argsort(to_numpy(pc.dictionary_encode(qids).indices),
                                      kind="stable"))
        table = table.take(order)
        return TrecTable(table.column("qid").chunk(0), table.column("docid").chunk(0),
                         to_numpy(table.column(2)), self.source)


@dataclass(frozen=True)
class Regrouped:
    """The temporary files of a run regrouped by query, and the rows each holds."""

    run: Scattered
    block_rows: int

    @property
    def files(self) -> list[Path]:
        return self.run.files

    @property
    def rows(self) -> list[int]:
        return self.run.rows

    def blocks(self) -> Iterator[TrecTable]:
        """The run's records, in blocks of whole queries: a file, or consecutive small files
        together up to a block's rows; each block's records ordered by query (file order
        within a query)."""
        for numbers in groups(self.run.rows, self.block_rows):
            yield self.run.read(numbers)


def groups(rows: list[int], block_rows: int) -> Iterator[list[int]]:
    """The numbers of the files that hold rows, in order, cut into runs of consecutive files
    that together hold at most ``block_rows`` rows (a file past it alone)."""
    group: list[int] = []
    held = 0
    for i, n in enumerate(rows):
        if group and held + n > block_rows:
            yield group
            group, held = [], 0
        if n:
            group.append(i)
            held += n
    if group:
        yield group


class NoTemporaryFiles(NotStreamable):
    """The temporary files could not be written (a missing or full temporary directory)."""


@contextmanager
def temporary_folder() -> Iterator[Path]:
    """A new folder under ``TMPDIR`` (or the system's temporary folder), removed on leaving."""
    where = os.environ.get("TMPDIR") or None
    try:
        folder = tempfile.TemporaryDirectory(prefix="recallwatch-regroup-", dir=where)
    except OSError as exc:
        raise NoTemporaryFiles(f"the temporary files could not be written in "
                               f"{where or tempfile.gettempdir()} ({exc})") from None
    with folder as name:
        yield Path(name)


@contextmanager
def regrouped(path: str | PathLike[str], block_bytes: int) -> Iterator[Regrouped]:
    """The run file at ``path`` scattered by query into temporary files, removed on leaving."""
    k = file_count(Path(path), block_bytes)
    with temporary_folder() as folder:
        run = scatter(run_file_pieces(path, block_bytes), folder, "run", k, str(path))
        yield Regrouped(run, block_rows(block_bytes))


def file_count(path: Path, block_bytes: int) -> int:
    """K: twice the blocks of text the file holds (by its size), so that a file rarely
    passes a block; files below a block are read together again."""
    return min(MAX_FILES, max(2, math.ceil(2 * text_bytes(path) / block_bytes)))


def text_bytes(path: Path) -> int:
    """About how much text the file holds: its size, several times over when it is
    compressed (gzip or Parquet)."""
    compressed = path.suffix.lower() == ".parquet" or (
        path.suffix.lower() not in COLUMNAR and starts_as_gzip(path))
    return path.stat().st_size * (_COMPRESSED if compressed else 1)


def scatter(pieces: Iterator[TrecTable], folder: Path, kind: TrecKind, k: int,
            source: str) -> Scattered:
    """Each piece's records appended to the file (of ``k`` in ``folder``) of its query."""
    files = [folder / f"{kind}-{i:03d}.arrow" for i in range(k)]
    try:
        rows = _scatter(pieces, files, _SCHEMAS[kind])
    except (OSError, pa.ArrowException) as exc:
        raise NoTemporaryFiles(f"the temporary files could not be written in {folder.parent} "
                               f"({exc})") from None
    return Scattered(files, rows, kind, source)


def _scatter(pieces: Iterator[TrecTable], files: list[Path], schema: pa.Schema) -> list[int]:
    k = len(files)
    rows = np.zeros(k, dtype=np.int64)
    sinks = [pa.OSFile(str(f), "wb") for f in files]
    writers: list[pa.ipc.RecordBatchFileWriter] = []
    values_type = schema.field(2).type.to_pandas_dtype()
    try:
        writers.extend(pa.ipc.new_file(sink, schema) for sink in sinks)
        for piece in pieces:
            encoded = pc.dictionary_encode(piece.query_ids)
            hashes = np.fromiter((zlib.crc32(q.encode()) for q in encoded.dictionary.to_pylist()),
                                 dtype=np.int64, count=len(encoded.dictionary))
            where = (hashes % k)[to_numpy(encoded.indices)]
            order = np.argsort(where, kind="stable")  # file order within each temporary file
            counts = np.bincount(where, minlength=k)
            take = from_numpy(order)
            qids, docids = piece.query_ids.take(take), piece.doc_ids.take(take)
            values = np.ascontiguousarray(piece.values[order], dtype=values_type)
            start = 0
            for i in np.flatnonzero(counts):
                n = int(counts[i])
                writers[i].write_batch(pa.record_batch(
                    [qids.slice(start, n), docids.slice(start, n),
                     from_numpy(values[start:start + n])], schema=schema))
                start += n
            rows += counts
    finally:
        for writer in writers:
            writer.close()
        for sink in sinks:
            sink.close()
    return [int(n) for n in rows]
