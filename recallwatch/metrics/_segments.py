"""Running totals within each query's block of rows (rows grouped by query, in rank order), for
the measures that walk down a ranking: how many rows of a kind came before, the best value from
here to the end, a running product."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._ranking import Ranking, _block_starts

__all__ = ["before", "block_first", "merged", "position", "suffix_max"]

Array = np.ndarray[Any, Any]


def _starts(qidx: Array) -> tuple[Array, Array]:
    """The first row of each block, and, for every row, the first row of its block."""
    first = np.flatnonzero(_block_starts(qidx)) if len(qidx) else np.zeros(0, dtype=np.int64)
    lengths = np.diff(np.append(first, len(qidx)))
    return first, np.repeat(first, lengths)


def block_first(qidx: Array) -> Array:
    """For each row, the index of the first row of its query's block."""
    return _starts(qidx)[1]


def position(qidx: Array) -> Array:
    """1-based position of each row within its query's block."""
    _, start = _starts(qidx)
    out: Array = np.arange(1, len(qidx) + 1) - start
    return out


def before(qidx: Array, flags: Array) -> Array:
    """For each row, how many earlier rows of its block have ``flags`` set (exact integers)."""
    counts = np.cumsum(flags.astype(np.int64)) - flags.astype(np.int64)
    _, start = _starts(qidx)
    out: Array = counts - counts[start] if len(qidx) else counts
    return out


def suffix_max(qidx: Array, values: Array) -> Array:
    """For each row, the largest value from that row to the end of its block (exactly: values
    are ranked, and the ranks, offset per block, accumulate as integers)."""
    if len(values) == 0:
        return values.astype(np.float64)
    distinct, code = np.unique(values, return_inverse=True)
    block = np.cumsum(_block_starts(qidx)) - 1  # 0, 0, ..., 1, 1, ...
    # reversed, blocks come in decreasing order: offset them so that later blocks weigh more
    rev_keyed = (block.max() - block[::-1]).astype(np.int64) * len(distinct) + code[::-1]
    best = np.maximum.accumulate(rev_keyed)[::-1]
    out: Array = distinct[best % len(distinct)]
    return out


def merged(r: Ranking) -> tuple[Array, Array, Array]:
    """Every retrieved judged document, whatever its grade, as (query index, rank, grade) in
    rank order within each query (needs a ranking made with ``judged=True``)."""
    if r.other is None:  # pragma: no cover - evaluate() asks for it from the family's needs
        raise RuntimeError("this measure needs the ranks of judged non-relevant documents")
    qidx = np.concatenate([r.qidx, r.other.qidx])
    rank = np.concatenate([r.rank, r.other.rank])
    grade = np.concatenate([r.grade, r.other.grade])
    order = np.lexsort((rank, qidx))
    return qidx[order], rank[order], grade[order]
