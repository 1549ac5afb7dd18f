"""Vectors as Arrow fixed-size-list columns, both ways: how LanceDB tables and the index files'
Parquet sidecars hold them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["vector_column", "vectors_of"]


def vector_column(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """An (n, d) matrix as a float32 ``fixed_size_list<d>`` column of n rows."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    flat = pa.array(arr.reshape(-1), type=pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, arr.shape[1])


def vectors_of(column: pa.ChunkedArray | pa.Array, dim: int | None = None) -> np.ndarray:
    """A ``fixed_size_list`` column as a float32 (n, d) matrix (``dim`` gives the width of an
    empty column; without it, an empty column is (0, 0))."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(arr) == 0:
        return np.empty((0, dim or 0), dtype=np.float32)
    width = arr.type.list_size
    flat = arr.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(-1, width)
