"""Impressions reduced to the counts every click model is fitted from, in one streaming pass.

A click model never needs the impressions themselves, only how often each (query, document) pair
was shown at each rank in each context and how often it was clicked there. So impressions are
integer-encoded and aggregated batch by batch into count tables whose size is the number of
distinct contexts seen, not the number of impressions: ten million impressions of ten results
fit in a few megabytes of counts.

Tables kept (``P`` distinct pairs, ``M`` distinct cells):

- per pair: impressions, clicks, and the two counts of the simplified DBN: times the pair was at
  or above the impression's last click ("examined" under that model; every result when nothing
  was clicked) and times it was the last click; the DBN's certain examinations (at or above the
  last click, none when nothing was clicked); the cascade model's examinations (at or above the
  first click, every result when nothing was clicked) and first clicks;
- per distinct *tail* (what the full DBN's EM needs, see ``dbn``): the pairs from the last click
  down (the whole list when nothing was clicked) and how many impressions ended that way;
- per cell ``(pair, rank, previous-click rank)``: impressions ``n`` and clicks ``c``. The
  previous-click rank is the rank of the nearest click above (0 when none), which UBM needs;
  PBM sums it out, DCTR sums out the rank too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.judgments.click_models._tails import Tails, TailTable, session_tails

__all__ = ["ClickCounter", "ClickCounts", "ClickRecord"]

Array = np.ndarray[Any, Any]

#: Results deeper than this are ignored by the click models (bounded table keys; users rarely
#: look past the second page). Raise it with ``ClickCounter(max_rank=…)`` up to 1000.
DEFAULT_MAX_RANK = 50
_SLOT_BITS = 20  # cell key = pair << 20 | slot, slot = r (r - 1) / 2 + previous-click rank
# Per-batch cell tables wait in a list and are merged (concatenated, summed by cell) once they
# hold this many rows, or twice the merged table's, whichever is more: memory stays a small
# multiple of the number of distinct cells, and merging costs amortised O(1) per row.
_MERGE_ROWS = 1_000_000
_ROWS = 7


class ClickRecord(Protocol):
    """What a click model reads from an impression (``recallwatch.online.Impression`` is one)."""

    @property
    def query_key(self) -> str: ...

    @property
    def shown(self) -> Sequence[str]: ...

    @property
    def click_positions(self) -> Sequence[int]: ...


@dataclass(frozen=True)
class ClickCounts:
    """The aggregated counts (see the module docstring). Pair ``i`` is document
    ``doc_names[pair_doc[i]]`` for query ``query_names[pair_query[i]]``."""

    query_names: list[str]
    doc_names: list[str]
    pair_query: Array  # int64[P]
    pair_doc: Array  # int64[P]
    impressions: Array  # int64[P]
    clicks: Array  # int64[P]
    sdbn_examined: Array  # int64[P]
    sdbn_last: Array  # int64[P]
    cell_pair: Array  # int64[M]
    cell_rank: Array  # int64[M], 1-based
    cell_prev: Array  # int64[M], rank of the nearest click above, 0 when none
    cell_n: Array  # int64[M]
    cell_c: Array  # int64[M]
    n_impressions: int
    max_rank: int
    dbn_certain: Array | None = None  # int64[P]: at or above the last click (none without)
    cm_examined: Array | None = None  # int64[P]: at or above the first click (all without)
    cm_first: Array | None = None  # int64[P]: times the first click
    tails: Tails | None = None
    dbn_continued: int = 0  # Σ (last click rank − 1): certain moves down to the next result
    clicks_beyond_max_rank: int = 0  # clicks on results deeper than max_rank (not counted)
    impressions_beyond_max_rank: int = 0  # impressions with such a click
    clicks_after_first: int = 0  # clicks below an impression's first click (the CM ignores them)

    @property
    def n_pairs(self) -> int:
        return int(self.pair_query.size)

    def pair_labels(self) -> tuple[list[str], list[str]]:
        """(query ids, document ids) of every pair, as strings."""
        return ([self.query_names[q] for q in self.pair_query.tolist()],
                [self.doc_names[d] for d in self.pair_doc.tolist()])


class ClickCounter:
    """Accumulates impressions into :class:`ClickCounts` in bounded memory.

    Feed it ``add(records)`` (strings, encoded here) or ``add_encoded(...)`` (already integer
    ids, as a simulator produces them), then call ``counts()``. ``tails=True`` also keeps what
    the full DBN needs (``_tails``; memory grows with the distinct tails, up to one row per
    impression). ``add`` works ``batch_size``
    impressions at a time: its transient memory is about 1.5 kB per impression of the batch
    (25 MB at the default), whatever the length of the log.
    """

    def __init__(self, *, max_rank: int = DEFAULT_MAX_RANK, batch_size: int = 16_384,
                 tails: bool = False) -> None:
        if not 1 <= max_rank <= 1000:
            raise UsageError(f"max_rank must be between 1 and 1000, got {max_rank}")
        self.max_rank = max_rank
        self.batch_size = batch_size
        self._queries: dict[str, int] = {}
        self._docs: dict[str, int] = {}
        self._pairs: dict[int, int] = {}
        # impressions, clicks, SDBN examined, SDBN last, DBN certain, CM examined, CM first
        self._per_pair = np.zeros((_ROWS, 0), dtype=np.int64)
        # the DBN's tails: one row per distinct tail, up to one per impression, so kept only
        # when asked for (the other models' tables stay a few megabytes at any log length)
        self._tails = TailTable() if tails else None
        self._continued = 0
        self._deep_clicks = 0
        self._deep_impressions = 0
        self._after_first = 0
        self._pending: list[tuple[Array, Array, Array]] = []
        self._pending_rows = 0
        self._merged_rows = 0
        self._n_impressions = 0

    # -- input ---------------------------------------------------------------------------------

    def add(self, records: Iterable[ClickRecord]) -> None:
        """Encode and count impressions, ``batch_size`` at a time."""
        queries, docs = self._queries, self._docs
        q_batch: list[int] = []
        d_batch: list[list[int]] = []
        c_batch: list[Sequence[int]] = []
        for record in records:
            q_batch.append(queries.setdefault(record.query_key, len(queries)))
            d_batch.append([docs.setdefault(d, len(docs)) for d in record.shown[: self.max_rank]])
            c_batch.append(record.click_positions)
            if len(q_batch) >= self.batch_size:
                self._add_lists(q_batch, d_batch, c_batch)
                q_batch, d_batch, c_batch = [], [], []
        if q_batch:
            self._add_lists(q_batch, d_batch, c_batch)

    def _add_lists(self, q: list[int], d: list[list[int]], c: list[Sequence[int]]) -> None:
        width = max((len(row) for row in d), default=0)
        docs = np.full((len(d), max(width, 1)), -1, dtype=np.int64)
        clicked = np.zeros(docs.shape, dtype=bool)
        for i, row in enumerate(d):
            docs[i, : len(row)] = row
            deep = 0
            for p in c[i]:
                if p <= len(row):
                    clicked[i, p - 1] = True
                elif p > self.max_rank:
                    deep += 1
            if deep:
                self._deep_clicks += deep
                self._deep_impressions += 1
        self.add_encoded(np.asarray(q, dtype=np.int64), docs, clicked)

    def add_encoded(self, query_codes: Array, doc_codes: Array, clicked: Array) -> None:
        """Count a batch already integer-encoded: ``query_codes`` int[B], ``doc_codes`` int[B, K]
        (-1 where fewer than K results were shown), ``clicked`` bool[B, K]. Codes are any
        non-negative integers below 2**31; ``counts(query_names=…, doc_names=…)`` names them."""
        q = np.asarray(query_codes, dtype=np.int64)
        all_clicked = np.asarray(clicked, dtype=bool)
        if all_clicked.shape[1] > self.max_rank:
            deep = all_clicked[:, self.max_rank:].sum(axis=1)
            self._deep_clicks += int(deep.sum())
            self._deep_impressions += int(np.count_nonzero(deep))
        docs = np.asarray(doc_codes, dtype=np.int64)[:, : self.max_rank]
        clicked = all_clicked[:, : self.max_rank] & (docs >= 0)
        b, k = docs.shape
        self._n_impressions += b
        if b == 0 or k == 0:
            return
        ranks = np.arange(1, k + 1, dtype=np.int64)
        click_rank = np.where(clicked, ranks, 0)
        prev = np.zeros_like(click_rank)
        if k > 1:
            prev[:, 1:] = np.maximum.accumulate(click_rank, axis=1)[:, :-1]
        last = click_rank.max(axis=1, keepdims=True)
        first = np.where(clicked, ranks, k + 1).min(axis=1, keepdims=True)
        first[first > k] = 0
        valid = docs >= 0
        examined = valid & ((ranks <= last) | (last == 0))
        is_last = clicked & (ranks == last)
        certain = valid & (ranks <= last)
        cm_examined = valid & ((ranks <= first) | (first == 0))
        is_first = clicked & (ranks == first)
        self._continued += int(np.maximum(last - 1, 0).sum())
        self._after_first += int(clicked.sum() - is_first.sum())

        keys = (np.broadcast_to(q[:, None], docs.shape)[valid] << 32) | docs[valid]
        unique_keys, inverse = np.unique(keys, return_inverse=True)
        pair = self._pair_ids(unique_keys)[inverse]

        n_pairs = len(self._pairs)
        if self._per_pair.shape[1] < n_pairs:
            grown = np.zeros((_ROWS, max(n_pairs, 2 * self._per_pair.shape[1])), dtype=np.int64)
            grown[:, : self._per_pair.shape[1]] = self._per_pair
            self._per_pair = grown
        width = self._per_pair.shape[1]
        c_valid = clicked[valid]
        self._per_pair[0] += np.bincount(pair, minlength=width)
        for row, flags in enumerate((c_valid, examined[valid], is_last[valid], certain[valid],
                                     cm_examined[valid], is_first[valid]), start=1):
            self._per_pair[row] += np.bincount(pair, weights=flags,
                                               minlength=width).astype(np.int64)
        if self._tails is not None:
            pair_grid = np.full(docs.shape, -1, dtype=np.int64)
            pair_grid[valid] = pair
            self._tails.add(*session_tails(pair_grid, last[:, 0]))

        r = np.broadcast_to(ranks, docs.shape)[valid]
        slot = r * (r - 1) // 2 + prev[valid]
        cell_keys = (pair << _SLOT_BITS) | slot
        ucells, cinv, cn = np.unique(cell_keys, return_inverse=True, return_counts=True)
        cc = np.bincount(cinv, weights=c_valid, minlength=ucells.size).astype(np.int64)
        self._pending.append((ucells, cn.astype(np.int64), cc))
        self._pending_rows += ucells.size
        if self._pending_rows > max(_MERGE_ROWS, 2 * self._merged_rows):
            self._merge()

    def _pair_ids(self, unique_keys: Array) -> Array:
        pairs = self._pairs
        ids = np.fromiter((pairs.setdefault(k, len(pairs)) for k in unique_keys.tolist()),
                          dtype=np.int64, count=unique_keys.size)
        return ids

    def _merge(self) -> None:
        if len(self._pending) <= 1:
            return
        keys = np.concatenate([p[0] for p in self._pending])
        n = np.concatenate([p[1] for p in self._pending])
        c = np.concatenate([p[2] for p in self._pending])
        ukeys, inv = np.unique(keys, return_inverse=True)
        merged = (ukeys, np.bincount(inv, weights=n).astype(np.int64),
                  np.bincount(inv, weights=c).astype(np.int64))
        self._pending = [merged]
        self._pending_rows = self._merged_rows = ukeys.size

    # -- output --------------------------------------------------------------------------------

    def counts(
        self, *, query_names: Sequence[str] | None = None, doc_names: Sequence[str] | None = None
    ) -> ClickCounts:
        """The counts so far. Names default to the strings seen by ``add`` (or the codes)."""
        self._merge()
        n_pairs = len(self._pairs)
        keys = np.fromiter(self._pairs.keys(), dtype=np.int64, count=n_pairs)
        ids = np.fromiter(self._pairs.values(), dtype=np.int64, count=n_pairs)
        order = np.argsort(ids)
        keys = keys[order]
        if self._pending:
            cells, cell_n, cell_c = self._pending[0]
        else:
            cells = cell_n = cell_c = np.zeros(0, dtype=np.int64)
        slot = cells & ((1 << _SLOT_BITS) - 1)
        rank = ((1 + np.sqrt(1 + 8 * slot.astype(np.float64))) / 2).astype(np.int64)
        rank -= (rank * (rank - 1) // 2 > slot).astype(np.int64)  # float rounding guard
        prev = slot - rank * (rank - 1) // 2
        per_pair = self._per_pair[:, :n_pairs]
        return ClickCounts(
            query_names=_names(query_names, self._queries, keys >> 32),
            doc_names=_names(doc_names, self._docs, keys & 0xFFFFFFFF),
            pair_query=keys >> 32,
            pair_doc=keys & 0xFFFFFFFF,
            impressions=per_pair[0].copy(),
            clicks=per_pair[1].copy(),
            sdbn_examined=per_pair[2].copy(),
            sdbn_last=per_pair[3].copy(),
            dbn_certain=per_pair[4].copy(),
            cm_examined=per_pair[5].copy(),
            cm_first=per_pair[6].copy(),
            tails=None if self._tails is None else self._tails.table(),
            dbn_continued=self._continued,
            clicks_beyond_max_rank=self._deep_clicks,
            impressions_beyond_max_rank=self._deep_impressions,
            clicks_after_first=self._after_first,
            cell_pair=cells >> _SLOT_BITS,
            cell_rank=rank,
            cell_prev=prev,
            cell_n=cell_n,
            cell_c=cell_c,
            n_impressions=self._n_impressions,
            max_rank=self.max_rank,
        )


def _names(given: Sequence[str] | None, seen: dict[str, int], codes: Array) -> list[str]:
    if given is not None:
        return list(given)
    if seen:
        names = [""] * len(seen)
        for name, code in seen.items():
            names[code] = name
        return names
    top = int(codes.max()) + 1 if codes.size else 0
    return [str(i) for i in range(top)]
