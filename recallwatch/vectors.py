"""Vector maths, once for the whole package: unit rows, cosine scores, exact top-k.

**One precision rule.** Norms and dot products are computed in float64 and the answer is returned
as float32. A float32 sum depends on how the BLAS call is blocked (one query or a batch, a column
or the whole matrix), so the same cosine computed by ``search`` and by ``score_of`` could differ in
its last bit; computed in float64, the two agree once rounded to float32, and the gate's noise
rule compares like with like. A zero row has no direction: it stays zero, and its cosine with
anything is 0.

**One tie rule.** Higher score first; equal scores by id ascending, so an exact answer is
reproducible whatever order the rows were stored in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

__all__ = ["cosine_pairs", "cosine_scores", "normalise", "top_k", "top_k_positions", "top_k_rows"]

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
