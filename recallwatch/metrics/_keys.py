"""Ids as integers, without hashing every string: the fast path of a run's validation and join.

Two ideas, both exact:

* **Query blocks.** A run file lists each query's results together. Comparing every query id with
  the one before it (one vectorised string comparison) finds the blocks; only the block names
  (one per query, not one per line) are then hashed, to check that no query comes back later.
* **Packed document ids.** An id of at most 16 UTF-8 bytes without a NUL byte *is* a pair of
  64-bit integers: its bytes, big-endian, zero-padded. Equal ids give equal words and distinct ids
  distinct words (no hash, so no collision to rule out), and comparing the words compares the ids
  in byte order, trec_eval's tie-break. Packing is a gather and a mask per word; it replaces
  hashing ten million ids into a dictionary. Longer ids fall back to dictionary codes.

Per query, the run's rows then form the rows of a 2-D grid (padded when depths differ), so the
duplicate check is a row-wise sort and the ranking a row-wise comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recallwatch.formats.arrow import from_numpy, to_numpy

__all__ = ["NO_MATCH", "PAD", "Blocks", "DocKeys", "pack_ids", "query_blocks"]

Array = np.ndarray[Any, Any]

MAX_WORDS = 2  # ids up to 16 bytes are packed; longer ones are dictionary-coded
PAD = np.uint64(2**64 - 1)  # fills a padded grid cell: no packed id or code equals it
NO_MATCH = np.uint64(0)  # a key that matches nothing: packed ids never start with a 0 byte
_PAD_SHARE = 2  # pad ragged blocks into a grid only while it holds at most 2x the rows
_SMALL_GRID = 1 << 16  # ... or while it is this small anyway
_STEP = 1 << 16  # rows per step of the packing loop (its temporaries stay in cache)
# _KEEP[n]: keeps the first n bytes of a big-endian word
_KEEP = np.array([0] + [(2**64 - 1) ^ (2 ** (64 - 8 * n) - 1) for n in range(1, 9)],
                 dtype=np.uint64)


def _offsets(ids: pa.Array) -> Array:
    wide = pa.types.is_large_string(ids.type) or pa.types.is_large_binary(ids.type)
    dtype = np.int64 if wide else np.int32
    buffer = ids.buffers()[1]
    return np.frombuffer(buffer, dtype=dtype, count=len(ids) + 1,
                         offset=ids.offset * np.dtype(dtype).itemsize)


def pack_ids(
    ids: pa.Array, words: int | None = None
) -> tuple[tuple[Array, ...], Array | None] | None:
    """Each id's bytes as big-endian uint64 words, zero-padded (see the module docstring).

    With ``words`` None: as many words as the longest id needs, None when that is more than
    ``MAX_WORDS`` or an id holds a NUL byte (zero padding would then be ambiguous). With
    ``words`` given (to look ids up among ids packed that wide): ids that do not fit, or hold a
    NUL byte, are returned as ``NO_MATCH`` and flagged in the second element (else None).
    """
    n = len(ids)
    if ids.null_count:
        return None
    offsets = _offsets(ids)
    data = np.frombuffer(ids.buffers()[2], dtype=np.uint8) if n else np.zeros(8, np.uint8)
    used = data[offsets[0]:offsets[-1]] if n else data[:0]
    has_nul = bool(len(used)) and not used.all()
    longest = 0
    for start in range(0, n, _STEP):  # in cache-sized steps: no array of n temporaries
        piece = offsets[start:start + _STEP + 1]
        longest = max(longest, int(np.diff(piece).max()))
    unfit: Array | None = None
    if words is None:
        words = max(1, -(-longest // 8))
        if words > MAX_WORDS or has_nul:
            return None
    elif longest > 8 * words or has_nul:
        lengths = np.diff(offsets)
        unfit = lengths > 8 * words
        if has_nul:
            unfit |= _holds_nul(data, offsets)
    size = len(data)
    if size < 8:  # too short for one 8-byte window: pad a copy
        data = np.concatenate([data, np.zeros(8 - size, np.uint8)])
        size = 8
    # every 8-byte window of the data, read as one integer (a strided view: no copy)
    window = np.ndarray(shape=(size - 7,), dtype=np.uint64, buffer=data, strides=(1,))
    out = [np.empty(n, dtype=np.uint64) for _ in range(words)]
    for start in range(0, n, _STEP):
        piece = offsets[start:start + _STEP + 1]
        first, lengths = piece[:-1], np.diff(piece)
        for k, word in enumerate(out):
            part = word[start:start + len(first)]
            part[:] = window[np.minimum(first + 8 * k, size - 8)]  # (np.take would copy window)
            if np.little_endian:  # read big-endian: the first byte is the most significant
                part.byteswap(inplace=True)
            part &= _KEEP[np.clip(lengths - 8 * k, 0, 8)]
    starts = offsets[:-1]
    for i in np.flatnonzero(starts > size - 16 - 8 * words):  # the last few ids: their windows
        for k, word in enumerate(out):                       # would run past the buffer
            begin = int(starts[i]) + 8 * k
            keep = min(max(int(offsets[i + 1]) - begin, 0), 8)
            word[i] = int.from_bytes(data[begin:begin + keep].tobytes().ljust(8, b"\0"), "big")
    if unfit is not None:
        for word in out:
            word[unfit] = NO_MATCH
    return tuple(out), unfit


def _holds_nul(data: Array, offsets: Array) -> Array:
    """Whether each id holds a NUL byte (error-path speed: ids with NUL bytes are rare)."""
    nul = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(data == 0, out=nul[1:])
    counts: Array = nul[offsets[1:]] - nul[offsets[:-1]]
    return counts > 0


def mix(words: tuple[Array, ...]) -> Array:
    """One uint64 per row for sorting: the word itself for one word (exact), else a mix of the
    words, where equal mixes must be checked on the words."""
    if len(words) == 1:
        return words[0]
    out = words[0].copy()
    for word in words[1:]:
        out *= np.uint64(0x9E3779B97F4A7C15)
        out ^= word
    return out


@dataclass(frozen=True)
class Blocks:
    """Rows grouped by query: each query's rows contiguous, no query in two places."""

    starts: Array  # int64: the first row of each block, then the number of rows
    names: pa.Array  # the query id of each block

    def __len__(self) -> int:
        return len(self.starts) - 1

    @cached_property
    def widths(self) -> Array:
        return np.diff(self.starts)

    @cached_property
    def width(self) -> int:
        return int(self.widths.max())

    @cached_property
    def uniform(self) -> bool:
        return bool((self.widths == self.width).all())

    @cached_property
    def valid(self) -> Array | None:
        """Which cells of the padded grid hold a row (None when every block is full)."""
        if self.uniform:
            return None
        mask: Array = np.arange(self.width)[None, :] < self.widths[:, None]
        return mask

    def fits(self) -> bool:
        """Whether the padded grid stays small enough to build."""
        cells = len(self) * self.width
        return cells <= _SMALL_GRID or cells <= _PAD_SHARE * int(self.starts[-1])

    def grid(self, values: Array, fill: Any) -> Array:
        """``values`` (one per row, rows in block order) as a (blocks, width) array."""
        if self.valid is None:
            return values.reshape(len(self), self.width)
        out = np.full((len(self), self.width), fill, dtype=values.dtype)
        out[self.valid] = values  # row-major order of the valid cells is the row order
        return out


def query_blocks(query_ids: pa.Array) -> Blocks | None:
    """The query blocks of ``query_ids``, or None when some query's rows are not contiguous."""
    n = len(query_ids)
    if n == 0:
        return None
    change = pc.indices_nonzero(pc.not_equal(query_ids[1:], query_ids[:-1]))
    starts = np.empty(len(change) + 2, dtype=np.int64)
    starts[0], starts[-1] = 0, n
    starts[1:-1] = to_numpy(change)
    starts[1:-1] += 1
    names = query_ids.take(from_numpy(starts[:-1]))
    if pc.count_distinct(names).as_py() != len(names):
        return None
    return Blocks(starts, names)


@dataclass(frozen=True)
class DocKeys:
    """Exact integer keys of document ids: equal ids, equal keys.

    ``packed``: the ids' bytes (see :func:`pack_ids`), so key order is byte order. Otherwise the
    keys are dictionary codes plus one (0 stays free for ``NO_MATCH``), and byte order comes
    from sorting the dictionary.
    """

    words: tuple[Array, ...]  # uint64 each, one entry per row
    packed: bool
    dictionary: pa.Array | None = None  # the distinct ids, when coded

    @classmethod
    def of(cls, ids: pa.Array) -> DocKeys:
        packed = pack_ids(ids)
        if packed is not None:
            return cls(packed[0], packed=True)
        encoded = pc.dictionary_encode(ids)
        codes = to_numpy(encoded.indices).astype(np.uint64)
        codes += np.uint64(1)
        return cls((codes,), packed=False, dictionary=encoded.dictionary)

    def lookup(self, ids: pa.Array) -> tuple[Array, ...]:
        """Keys of ``ids`` in this key space; ``NO_MATCH`` where an id is not among these."""
        if self.packed:
            packed = pack_ids(ids, len(self.words))
            assert packed is not None  # with a fixed width, packing always answers
            return packed[0]
        assert self.dictionary is not None
        found = to_numpy(pc.index_in(ids, value_set=self.dictionary), fill=-1).astype(np.int64)
        return ((found + 1).astype(np.uint64),)

    def ordered(self) -> tuple[Array, ...]:
        """Keys whose order is the ids' byte order."""
        if self.packed:
            return self.words
        assert self.dictionary is not None
        order = to_numpy(pc.sort_indices(self.dictionary))
        rank = np.empty(len(order) + 1, dtype=np.uint64)
        rank[0] = 0
        rank[order + 1] = np.arange(1, len(order) + 1, dtype=np.uint64)
        return (rank[self.words[0].astype(np.int64)],)
