"""Impression *tails*: the part of a result list the full DBN's EM cannot count in closed form.

Under the dynamic Bayesian network (see ``dbn``) everything at or above an impression's last click
was examined for certain, so it reduces to per-pair counts. What happened below the last click
(or from the top, when nothing was clicked) is uncertain: the user may have been satisfied, may
have given up, or may have read on without clicking. The E-step needs, for each impression, the
pair that was last clicked and the pairs below it, in order. Impressions with the same tail are
interchangeable, so tails are kept as distinct rows with a count, merged batch by batch like the
count cells: memory follows the number of distinct tails, not of impressions.

A tail whose last click is on the last result shown says nothing the per-pair counts do not
(nothing below could be examined, and satisfaction is not observed), so it is not kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TailTable", "Tails", "session_tails"]

Array = np.ndarray[Any, Any]
_MERGE_ROWS = 500_000


@dataclass(frozen=True)
class Tails:
    """Distinct tails: ``pairs[u]`` the pair ids from the last click down (-1 pads the row),
    ``clicked[u]`` whether column 0 is the last click (else nothing was clicked and column 0 is
    rank 1), ``n[u]`` how many impressions ended that way."""

    pairs: Array  # int64[U, W]
    clicked: Array  # bool[U]
    n: Array  # int64[U]

    @property
    def size(self) -> int:
        return int(self.n.size)


def session_tails(pair_grid: Array, last: Array) -> tuple[Array, Array]:
    """Tails of a batch: ``pair_grid`` int64[B, K] pair ids (-1 where nothing was shown),
    ``last`` int[B] the rank of the last click (0 for none). Returns (rows int64[B', W] whose
    column 0 is the click flag, multiplicity int64[B']) for the informative impressions."""
    k = pair_grid.shape[1]
    start = np.maximum(np.asarray(last, dtype=np.int64) - 1, 0)
    index = start[:, None] + np.arange(k)
    inside = index < k
    rows = np.where(inside, np.take_along_axis(pair_grid, np.minimum(index, k - 1), axis=1), -1)
    clicked = np.asarray(last) > 0
    # informative: something below the last click, or (no click) something shown at all
    keep = np.where(clicked, rows[:, 1] >= 0 if k > 1 else False, rows[:, 0] >= 0)
    rows, clicked = rows[keep], clicked[keep]
    width = int((rows >= 0).sum(axis=1).max()) if rows.size else 0
    keyed = np.concatenate([clicked[:, None].astype(np.int64), rows[:, :width]], axis=1)
    if keyed.shape[0] == 0:
        return keyed, np.zeros(0, dtype=np.int64)
    unique, counts = np.unique(keyed, axis=0, return_counts=True)
    return unique, counts.astype(np.int64)


class TailTable:
    """Accumulates :func:`session_tails` batches into one table of distinct tails."""

    def __init__(self) -> None:
        self._pending: list[tuple[Array, Array]] = []
        self._rows = 0
        self._merged = 0

    def add(self, rows: Array, n: Array) -> None:
        if rows.shape[0] == 0:
            return
        self._pending.append((rows, n))
        self._rows += rows.shape[0]
        if self._rows > max(_MERGE_ROWS, 2 * self._merged):
            self._merge()

    def _merge(self) -> None:
        if len(self._pending) <= 1:
            return
        width = max(r.shape[1] for r, _ in self._pending)
        padded = [np.pad(r, ((0, 0), (0, width - r.shape[1])), constant_values=-1)
                  for r, _ in self._pending]
        keys = np.concatenate(padded)
        n = np.concatenate([m for _, m in self._pending])
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        merged = np.bincount(inverse.ravel(), weights=n).astype(np.int64)
        self._pending = [(unique, merged)]
        self._rows = self._merged = unique.shape[0]

    def table(self) -> Tails:
        self._merge()
        if not self._pending:
            return Tails(np.zeros((0, 1), dtype=np.int64), np.zeros(0, dtype=bool),
                         np.zeros(0, dtype=np.int64))
        rows, n = self._pending[0]
        return Tails(rows[:, 1:].copy(), rows[:, 0] == 1, n.copy())
