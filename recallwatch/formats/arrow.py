"""Arrow helpers shared by the readers and the metrics (memory Arrow owns, numpy views without
pandas, string arrays)."""

from __future__ import annotations

import ctypes
import functools
import os
import stat as stat_mode
from collections.abc import Callable
from io import BufferedIOBase, RawIOBase
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["arrow_owned", "contains_byte", "from_numpy", "read_owned", "strings", "to_numpy"]


def arrow_owned(data: bytes | memoryview | np.ndarray[Any, Any]) -> pa.Buffer:
    """A copy of ``data`` in memory that Arrow allocated and frees itself.

    Hand Arrow this, never a buffer wrapping a Python object, wherever Arrow may use threads.
    Arrow's threaded readers (the CSV reader, for one) can drop their last reference to the
    input on a worker thread *after* the call has returned. A buffer that wraps a Python object
    needs the GIL to be released; if the interpreter is already shutting down at that moment,
    Python ends that worker thread in the middle of C++ code and the whole process aborts with
    "terminate called without an active exception" (exit 134) after printing correct output.
    Memory Arrow owns is freed without Python, so the race cannot happen.
    """
    if isinstance(data, np.ndarray):
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        raw = np.frombuffer(data, dtype=np.uint8)
    buffer = pa.allocate_buffer(raw.nbytes)
    if raw.nbytes:
        np.frombuffer(buffer, dtype=np.uint8)[:] = raw
    return buffer


def read_owned(stream: BufferedIOBase | RawIOBase,
               each: Callable[[bytes], None] | None = None) -> pa.Buffer | None:
    """The rest of a regular file, read straight into memory Arrow owns (one copy, not two);
    None when ``stream`` is not a regular file or changes size while it is read. ``each`` is
    shown every piece read (of at most 4 MB, in order) before it is kept, and may raise to stop
    the reading there (a line over the cap)."""
    try:
        info = os.fstat(stream.fileno())
        if not stat_mode.S_ISREG(info.st_mode):
            return None
        size = info.st_size - stream.tell()
    except (OSError, AttributeError, ValueError):
        return None
    if size < 0:
        return None
    buffer = pa.allocate_buffer(size)  # reserved, not yet touched: a sparse file costs nothing
    view = memoryview(buffer).cast("B")
    done = 0
    while done < size:
        if each is None:
            n = stream.readinto(view[done:])
        else:
            piece = stream.read(min(_PIECE, size - done)) or b""
            each(piece)
            n = len(piece)
            view[done:done + n] = piece
        if not n:
            return None  # shrank while read
        done += n
    if stream.read(1):
        return None  # grew while read
    return buffer


_PIECE = 1 << 22


@functools.cache
def _memchr() -> Callable[[int, int, int], int | None] | None:
    try:
        memchr = ctypes.CDLL(None).memchr
    except (OSError, AttributeError, TypeError):  # no C library to look in (Windows)
        return None
    memchr.restype = ctypes.c_void_p
    memchr.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    return memchr


def contains_byte(buffer: pa.Buffer, byte: int) -> bool:
    """Whether ``byte`` occurs in ``buffer``: C's ``memchr`` (what ``bytes.__contains__`` uses),
    at memory speed and without copying the buffer into a ``bytes`` object."""
    if buffer.size == 0:
        return False
    memchr = _memchr()
    if memchr is not None:
        return memchr(buffer.address, byte, buffer.size) is not None
    data = np.frombuffer(buffer, dtype=np.uint8)
    step = 1 << 22
    return any(bool((data[i:i + step] == byte).any()) for i in range(0, len(data), step))


def to_numpy(array: pa.Array | pa.ChunkedArray, fill: Any = None) -> np.ndarray[Any, Any]:
    """The values of a primitive Arrow array as numpy, nulls replaced by ``fill``.

    ``pa.Array.to_numpy`` and ``fill_null`` import pandas (about a second) on first use; reading
    the buffers directly does not.
    """
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks > 1 and not array.null_count:
            # numpy concatenates into numpy memory: one copy, no Arrow intermediate
            return np.concatenate([to_numpy(chunk) for chunk in array.chunks])
        array = array.combine_chunks()
    dtype = np.dtype(array.type.to_pandas_dtype())
    validity, buffer = array.buffers()[:2]
    if buffer is None:
        return np.empty(0, dtype=dtype)
    n, offset = len(array), array.offset
    values = np.frombuffer(buffer, dtype=dtype, count=n, offset=offset * dtype.itemsize)
    if array.null_count:
        if fill is None:
            raise ValueError("to_numpy: the array has nulls and no fill value was given")
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
        values = np.where(bits[offset : offset + n].astype(bool), values, fill)
    return values


def from_numpy(values: np.ndarray[Any, Any]) -> pa.Array:
    """A 1-D numpy array of numbers or booleans as an Arrow array, in Arrow-owned memory.

    ``pa.array`` would import pandas (about a second) to rule out pandas input.
    """
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, arrow_owned(bits)])
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [None, arrow_owned(values)])


def strings(values: list[Any]) -> pa.Array:
    """An Arrow string array from a list of ``str``, built from buffers.

    ``pa.array`` would import pandas (about a second) to rule out pandas input. Raises TypeError
    when an element is not a ``str``.
    """
    text = "".join(values)  # TypeError on a non-str element
    data = text.encode("utf-8")
    wide = len(data) >= 2**31
    offsets = np.zeros(len(values) + 1, dtype=np.int64 if wide else np.int32)
    np.cumsum(_byte_lengths(values, ascii=len(data) == len(text)), out=offsets[1:])
    kind = pa.LargeStringArray if wide else pa.StringArray
    array = kind.from_buffers(len(values), arrow_owned(offsets), arrow_owned(data))
    return array.cast(pa.string()) if wide else array


def _byte_lengths(values: list[str], ascii: bool) -> np.ndarray[Any, Any]:
    """Each string's length in UTF-8 bytes. Read off the strings joined with NUL bytes between
    them (where the NULs are: a C-level scan, about half the time of a ``len`` per string);
    one by one when a string holds a NUL itself."""
    n = len(values)
    marks = np.frombuffer("\0".join(values).encode("utf-8"), dtype=np.uint8)
    ends = np.flatnonzero(marks == 0)
    if len(ends) == max(n - 1, 0):
        bounds = np.empty(n + 1, dtype=np.int64)
        bounds[0], bounds[n] = -1, len(marks)
        bounds[1:n] = ends
        lengths: np.ndarray[Any, Any] = np.diff(bounds) - 1
        return lengths
    if ascii:  # one byte per character
        return np.fromiter(map(len, values), dtype=np.int64, count=n)
    return np.fromiter((len(v.encode("utf-8")) for v in values), dtype=np.int64, count=n)
