"""Arrow helpers shared by the readers and the metrics (memory Arrow owns, numpy views without
pandas, string arrays)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["arrow_owned", "strings", "to_numpy"]


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


def to_numpy(array: pa.Array | pa.ChunkedArray, fill: Any = None) -> np.ndarray[Any, Any]:
    """The values of a primitive Arrow array as numpy, nulls replaced by ``fill``.

    ``pa.Array.to_numpy`` and ``fill_null`` import pandas (about a second) on first use; reading
    the buffers directly does not.
    """
    if isinstance(array, pa.ChunkedArray):
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


def strings(values: list[Any]) -> pa.Array:
    """An Arrow string array from a list of ``str``, built from buffers.

    ``pa.array`` would import pandas (about a second) to rule out pandas input. Raises TypeError
    when an element is not a ``str``.
    """
    text = "".join(values)  # TypeError on a non-str element
    data = text.encode("utf-8")
    if len(data) == len(text):  # ASCII: one byte per character
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    else:
        lengths = np.fromiter(
            (len(v.encode("utf-8")) for v in values), dtype=np.int64, count=len(values)
        )
    wide = len(data) >= 2**31
    offsets = np.zeros(len(values) + 1, dtype=np.int64 if wide else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    kind = pa.LargeStringArray if wide else pa.StringArray
    array = kind.from_buffers(len(values), arrow_owned(offsets), arrow_owned(data))
    return array.cast(pa.string()) if wide else array
