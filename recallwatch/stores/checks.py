"""What a store checks before its engine sees anything: names, filters, vectors, ids and k.

Each check raises the package's own error (UsageError for a bad request, InputError for bad data)
with what was expected and what was found, so no engine is ever handed a NaN, a ragged matrix, a
duplicate id or a depth of three billion.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np

from recallwatch.errors import InputError, UsageError
from recallwatch.stores.base import FILTER_FIELDS, Chunk, Filter

__all__ = [
    "NormFilter",
    "check_k",
    "check_name",
    "check_unique_ids",
    "check_vectors",
    "chunk_matches",
    "clamp_k",
    "normalise_filter",
]

# A validated filter: column -> allowed values (one value = equality, several = IN).
NormFilter: TypeAlias = dict[str, tuple[str, ...]]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
# Every engine accepts a k this small whatever the row count; counting rows costs a query on some
# (a full scan in PostgreSQL), so only a deeper k is compared with the count.
_UNCOUNTED_K = 1000


def check_name(name: str | None, *, what: str, uri: str) -> str:
    """A table/collection name usable verbatim in every engine (and in ``<name>__v<N>``)."""
    if not name:
        raise UsageError(f"store URI {uri!r}: missing {what} name")
    if not _NAME_RE.match(name) or "__" in name:
        raise UsageError(
            f"store URI {uri!r}: {what} name {name!r} is invalid: expected letters, digits and "
            "single underscores, starting with a letter or '_', at most 48 characters"
        )
    return name


def normalise_filter(filter: Filter | None) -> NormFilter | None:
    """Validate a user filter: known columns only, string values, at least one value each."""
    if not filter:
        return None
    out: NormFilter = {}
    for key, value in filter.items():
        if key not in FILTER_FIELDS:
            raise UsageError(
                f"cannot filter on {key!r}: filterable fields are {', '.join(FILTER_FIELDS)}"
            )
        values = (value,) if isinstance(value, str) else (
            tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else ())
        if not values or not all(isinstance(v, str) for v in values):
            raise UsageError(
                f"filter on {key!r}: expected a string or a non-empty list of strings, "
                f"found {value!r}"
            )
        out[key] = values
    return out


def chunk_matches(row: Mapping[str, Any], filter: NormFilter | None) -> bool:
    """The filter evaluated in Python, for engines (and exports) that cannot push it down."""
    return filter is None or all(row.get(k) in values for k, values in filter.items())


def check_vectors(vectors: np.ndarray, rows: int | None, what: str, dim: int | None) -> np.ndarray:
    """float32 (n, d) vectors, or an InputError naming what is wrong (shape, width, NaN)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InputError(field=what, expected="a 2-D array (rows, dimension)",
                         found=f"<array of shape {arr.shape}>")
    if rows is not None and arr.shape[0] != rows:
        raise InputError(field=what, expected=f"{rows} rows (one per chunk)",
                         found=f"<{arr.shape[0]} rows>")
    if dim is not None and arr.shape[1] != dim:
        raise InputError(field=what, expected=f"dimension {dim} (the store's)",
                         found=f"<dimension {arr.shape[1]}>")
    if not np.isfinite(arr).all():
        raise InputError(field=what, expected="finite numbers", found="<NaN or infinity>")
    return arr


def check_unique_ids(chunks: Sequence[Chunk]) -> None:
    """One upsert may name a chunk only once."""
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.id in seen:
            raise InputError("duplicate chunk id in one upsert", record=chunk.id, field="id")
        seen.add(chunk.id)


def check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"k must be a positive integer, found {k!r}")


def clamp_k(k: int, count: Callable[[], int]) -> int:
    """``k`` checked, and never more than the ``count()`` rows there are. Asking for more than
    exists is harmless to the caller, but engines allocate k result slots or reject a k beyond
    their limit, so a depth like 3,000,000,000 must never reach them."""
    check_k(k)
    return k if k <= _UNCOUNTED_K else min(k, count())
