"""Vector maths, once for the whole package: unit rows, cosine scores, exact top-k.

**One precision rule.** Norms and dot products are computed in float64 and the answer is returned
as float32. A float32 sum depends on how the BLAS call is blocked (one query or a batch, a column
or the whole matrix), so the same cosine computed by ``search`` and by ``score_of`` could differ in
its last bit; computed in float64, the two agree once rounded to float32, and the gate's noise
rule compares like with like. A zero row has no direction: it stays zero, and its cosine with
anything is 0.

**One tie rule.** Higher score first; equal scores by id ascending, so an exact answer is
reproducible whatever order the rows were stored in.

**The measures' tie order.** A run file carries no order of its own: trec_eval and `recallwatch
eval` rank its results by score, and exactly equal scores by id *descending* (byte order). A list
ranked by the rule above, or by fusion (which keeps the order it met the chunks in), scored as it
stands and then written to a run file and evaluated would give two values of RR, nDCG or AP.
:func:`measured_tie_order` reorders each run of consecutive equal scores by id descending and
nothing else; every list recallwatch orders itself goes through it before the gate cuts or scores
it (the store's choice of *which* tied items fill its top k is left as it is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

__all__ = [
    "cosine_pairs",
    "cosine_scores",
    "measured_tie_order",
    "normalise",
    "ties_as_measured",
    "top_k",
    "top_k_positions",
    "top_k_rows",
]

_Id = TypeVar("_Id", str, int)
_BLOCK = 16384  # rows converted to float64 at a time


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a zero row stays zero), as float32. Computed a block of rows
    at a time, so a large matrix costs one float32 copy, not a float64 one."""
    arr = np.asarray(x)
    rows = arr[None, :] if arr.ndim == 1 else arr
    out = np.empty(rows.shape, dtype=np.float32)
    for start in range(0, rows.shape[0], _BLOCK):
        out[start:start + _BLOCK] = _unit64(rows[start:start + _BLOCK])
    return out[0] if arr.ndim == 1 else out


def cosine_scores(queries: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every query row with every vector row: float32, shape (q, n)."""
    q = np.asarray(queries)
    v = np.asarray(vectors)
    if q.ndim == 1:
        q = q[None, :]
    if v.ndim == 1:
        v = v[None, :]
    out = np.empty((q.shape[0], v.shape[0]), dtype=np.float32)
    if q.shape[0] == 0 or v.shape[0] == 0:
        return out
    unit_q = _unit64(q)
    for start in range(0, v.shape[0], _BLOCK):
        out[:, start:start + _BLOCK] = unit_q @ _unit64(v[start:start + _BLOCK]).T
    return out


def cosine_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of row i of ``a`` with row i of ``b``: float32, shape (n,)."""
    ua, ub = _unit64(np.atleast_2d(a)), _unit64(np.atleast_2d(b))
    if ua.shape != ub.shape:
        raise ValueError(f"cosine_pairs: shapes {ua.shape} and {ub.shape} differ")
    out: np.ndarray = np.einsum("ij,ij->i", ua, ub).astype(np.float32)
    return out


def _unit64(x: np.ndarray) -> np.ndarray:
    x64 = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x64, axis=1, keepdims=True)
    out = np.zeros_like(x64)
    np.divide(x64, norms, out=out, where=norms > 0)
    return out


def top_k(ids: Sequence[_Id], scores: np.ndarray, k: int) -> tuple[list[_Id], np.ndarray]:
    """The ``k`` best of one row of scores, by the tie rule above: their ids and their scores
    (float32, non-increasing)."""
    values = np.asarray(scores, dtype=np.float32).reshape(-1)
    order = top_k_positions(ids, values, k)
    return [ids[i] for i in order], values[order]


def top_k_positions(ids: Sequence[_Id], scores: np.ndarray, k: int) -> list[int]:
    """The positions of :func:`top_k`'s choice, best first."""
    values = np.asarray(scores, dtype=np.float32).reshape(-1)
    if len(ids) != len(values):
        raise ValueError(f"top_k: {len(ids)} ids but {len(values)} scores")
    n = len(values)
    k = max(0, min(k, n))
    if k == 0:
        return []
    candidates: Sequence[int] = range(n)
    if k < n:
        # everything scoring at least the k-th best, ties included, then the exact order
        kth = np.partition(values, n - k)[n - k]
        candidates = np.flatnonzero(values >= kth).tolist()
    return sorted(candidates, key=lambda i: (-float(values[i]), ids[i]))[:k]


def top_k_rows(scores: np.ndarray, k: int, ids: np.ndarray | None = None) -> np.ndarray:
    """Per row of a score matrix, the positions of its ``k`` best columns, best first, by the tie
    rule above with integer ``ids`` (one per column, or one row per score row; default the
    column positions)."""
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"top_k_rows: expected a 2-D score matrix, found shape {s.shape}")
    keys = np.broadcast_to(np.arange(s.shape[1]) if ids is None else np.asarray(ids), s.shape)
    order = np.lexsort((keys, -s.astype(np.float64)), axis=1)
    out: np.ndarray = order[:, :max(0, k)]
    return out


def measured_tie_order(ids: Sequence[str], scores: Sequence[float] | np.ndarray
                       ) -> list[int] | None:
    """The positions of a ranked list with each run of consecutive, exactly equal scores ordered
    by id descending (the measures' order, see the module docstring), or None when the list is
    already so (the common case, found without a Python loop). Results whose scores differ keep
    their places, so a list whose scores rise somewhere keeps its order there."""
    values = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(ids) != len(values):
        raise ValueError(f"measured_tie_order: {len(ids)} ids but {len(values)} scores")
    tied = np.flatnonzero(values[1:] == values[:-1])  # i: result i ties with result i + 1
    if tied.size == 0:
        return None
    order = list(range(len(ids)))
    changed = False
    start = int(tied[0])
    for here, after in zip(tied.tolist(), [*tied[1:].tolist(), -1]):
        if after == here + 1:
            continue  # the run of ties goes on
        run = list(range(start, here + 2))
        largest_first = sorted(run, key=ids.__getitem__, reverse=True)
        if largest_first != run:
            order[start:here + 2] = largest_first
            changed = True
        start = after
    return order if changed else None


def ties_as_measured(hits: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """(id, score) pairs in rank order, their exact ties ordered by :func:`measured_tie_order`."""
    order = measured_tie_order([cid for cid, _ in hits], [score for _, score in hits])
    return list(hits) if order is None else [hits[i] for i in order]
