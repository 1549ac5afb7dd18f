"""Precomputed vectors for a corpus ("bring your own vectors"): a ``vector`` field in each
JSONL or Parquet record, or a NumPy ``.npy`` file beside the corpus (``corpus.jsonl`` ->
``corpus.npy``) holding one row per record, in the file's order.

Every vector must have the dimension of the embedder named for the queries; a record without a
vector, a vector of the wrong length or with a value that is not a finite number is an
InputError naming the file, the line (or row) and the record.

:class:`CorpusVectors` checks them record by record while the corpus streams past and keeps
none of them (the ``.npy``'s header gives its shape and type; its rows are read from the file a
block at a time, not through a memory map, whose pages would stay resident), so an ingestion
can take each vector when it writes its chunk.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.errors import InputError

__all__ = ["CorpusVectors", "beside"]

_BLOCK_BYTES = 1 << 19  # .npy rows read at a time: 512 KiB of them (256 rows at 512-d float32)


def beside(corpus: Path) -> Path:
    """The ``.npy`` file that goes with a corpus: its name without the corpus suffixes."""
    name = corpus.name
    for suffix in (".jsonl.gz", ".jsonl", ".ndjson", ".parquet"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return corpus.with_name(name + ".npy")


class CorpusVectors:
    """The precomputed vectors of a corpus file, checked as its records stream past.

    Call :meth:`see` with every record in file order (every record whose ``id`` is a string has
    a vector: its field, or the next row of the ``.npy``), then :meth:`finish`; the first bad
    vector raises. After that, :meth:`vector` gives a record's vector by its row (its place among
    the records with a string id).
    """

    def __init__(self, corpus: Path, dimension: int, *,
                 embedder: str = "the query embedder") -> None:
        self.corpus, self.dimension, self.embedder = corpus, dimension, embedder
        self.expected = f"{dimension} finite numbers (the dimension of {embedder})"
        self.npy = beside(corpus)
        self.in_field = False  # some record has a `vector` field: every one must
        self.rows = 0  # records with a string id seen
        self._missing: tuple[int | None, str] | None = None  # the first one without a vector
        self._matrix: np.ndarray | None = None  # memory-mapped: its shape, type and layout
        self._cached: tuple[int, np.ndarray] = (0, np.empty((0, dimension), dtype=np.float32))
        self._per_block = max(1, _BLOCK_BYTES // (4 * max(1, dimension)))
        self._load_error: Exception | None = None
        self._block: list[str] = []  # ids of the .npy rows not yet checked
        self._bad: tuple[int, str] | None = None  # the first .npy row that is not finite
        if self.npy.is_file():
            try:
                self._matrix = np.load(self.npy, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError) as exc:
                self._load_error = exc

    def see(self, line: int | None, record: dict[str, Any] | None) -> None:
        rid = None if record is None else record.get("id")
        if record is None or not isinstance(rid, str):
            return
        self.rows += 1
        if "vector" in record:
            if not self.in_field and self._missing is not None:
                _vector(None, self.dimension, self.corpus, *self._missing, self.expected)
            self.in_field = True
            _vector(record["vector"], self.dimension, self.corpus, line, rid, self.expected)
        elif self.in_field:
            _vector(None, self.dimension, self.corpus, line, rid, self.expected)
        else:
            if self._missing is None:
                self._missing = (line, rid)
            if self._bad is None and self._shaped():
                self._block.append(rid)
                if len(self._block) == self._per_block:
                    self._check_block()

    def finish(self) -> None:
        """The checks that need the whole file: the ``.npy``'s presence, shape and numbers."""
        if self.in_field:
            return
        if not self.npy.is_file():
            raise InputError(source=self.corpus, field="vector",
                             expected=f"a `vector` field in each record, or {self.npy.name} "
                             "beside it", found="<neither>")
        if self._matrix is None:
            raise InputError(source=self.npy, expected="a NumPy .npy array",
                             found=f"<{self._load_error}>")
        shape = tuple(self._matrix.shape)
        if len(shape) != 2 or shape[0] != self.rows or shape[1] != self.dimension:
            raise InputError(source=self.npy, expected=f"an array of {self.rows} rows (one per "
                             f"record of {self.corpus.name}) × {self.dimension} columns (the "
                             f"dimension of {self.embedder})", found=f"shape {shape}")
        if self._bad is None:
            self._check_block()
        if self._bad is not None:
            row, rid = self._bad
            raise InputError(source=self.npy, line=row + 1, record=rid,
                             expected="finite numbers", found="<NaN or infinity>")

    def vector(self, row: int, record: dict[str, Any]) -> np.ndarray:
        """The vector of a checked record: its field, or row ``row`` of the ``.npy``."""
        if self.in_field:
            return np.asarray(record["vector"], dtype=np.float32)
        start, rows = self._cached
        if not start <= row < start + len(rows):  # read on, a block of rows at a time
            self._cached = start, rows = row, self._rows(row, row + self._per_block)
        vector: np.ndarray = rows[row - start]
        return vector

    def _rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of the ``.npy`` as float32. Read from the file rather than through
        the memory map: pages read through a map stay in the process's resident memory."""
        m = self._matrix
        if m is None:
            raise RuntimeError("CorpusVectors: the .npy rows read before finish()")
        stop = min(stop, m.shape[0])
        if not isinstance(m, np.memmap) or not m.flags.c_contiguous:
            return np.asarray(m[start:stop], dtype=np.float32)
        width = m.shape[1] * m.dtype.itemsize
        with self.npy.open("rb") as fh:
            fh.seek(m.offset + start * width)
            data = fh.read((stop - start) * width)
        if len(data) != (stop - start) * width:
            raise InputError(source=self.npy, expected=f"{m.shape[0]} rows",
                             found="<fewer: the file changed while it was being read>")
        rows: np.ndarray = np.frombuffer(data, dtype=m.dtype).reshape(stop - start, m.shape[1])
        return rows.astype(np.float32)

    def _shaped(self) -> bool:
        m = self._matrix
        return (m is not None and m.ndim == 2 and m.shape[1] == self.dimension
                and self.rows <= m.shape[0])

    def _check_block(self) -> None:
        """Check the rows of the ids in the block (the last ones seen) for finite numbers."""
        if self._block and self._matrix is not None:
            start = self.rows - len(self._block)
            rows = self._rows(start, self.rows)
            bad = np.flatnonzero(~np.isfinite(rows).all(axis=1))
            if bad.size:
                self._bad = (start + int(bad[0]), self._block[int(bad[0])])
        self._block = []


def _vector(value: Any, dimension: int, source: Path, line: int | None, record: str,
            expected: str) -> None:
    if not isinstance(value, list) or len(value) != dimension or not all(
            not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)
            for x in value):
        found = (f"{len(value)} numbers" if isinstance(value, list) else
                 "<no vector>" if value is None else type(value).__name__)
        raise InputError(source=source, line=line, record=record, field="vector",
                         expected=expected, found=found)
