"""Filtered search as VectorDBBench measures it: recall@k and queries per second when every query
carries a metadata filter that lets through 1 %, 10 % or 50 % of the rows (the *selectivity*).

Every base row gets a tag in its ``domain`` field: a random ``selectivity[0]`` share of the rows
is tagged ``p1``, the next share up to ``selectivity[1]`` ``p2``, and so on, the rest ``other``,
so the filter ``domain IN (p1 … pj)`` lets through exactly the first ``j`` shares (rounded to
whole rows). For each selectivity, the queries run one at a time through the store's own search
with that filter (its ANN index and its own way of filtering, see
:class:`~recallwatch.stores.base.SupportsFilteredSearch`), and recall@k is measured against the
exact top-k among the rows that pass the filter (brute force). An unfiltered run (100 %) comes
first, for comparison.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.bench.exact_knn import id_recall
from recallwatch.bench.live import (
    TAG_FIELD,
    Timed,
    exact_ids,
    filter_strategy,
    row_chunks,
    timed_search,
)
from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.bench.datasets import Dataset
    from recallwatch.stores.base import Filter, VectorStore

__all__ = ["SELECTIVITIES", "FilteredResult", "FilteredRow", "run_filtered", "selectivity_tags",
           "tag_filter"]

SELECTIVITIES: tuple[float, ...] = (0.01, 0.10, 0.50)
_OTHER = "other"
_WRITE_BATCH = 100_000  # rows per upsert: one write (one index build) for the sizes benchmarked


def check_selectivities(values: Sequence[float]) -> tuple[float, ...]:
    """Increasing shares in (0, 1), or a UsageError saying what was found."""
    out = tuple(float(v) for v in values)
    if not out or any(not 0 < v < 1 for v in out) or list(out) != sorted(set(out)):
        raise UsageError(f"selectivities must be increasing fractions between 0 and 1 "
                         f"(e.g. 0.01,0.1,0.5), found {','.join(str(v) for v in values)}")
    return out


def selectivity_tags(n: int, selectivities: Sequence[float], seed: int = 0) -> list[str]:
    """Each row's tag: ``p1`` for a random ``selectivities[0]`` share of the ``n`` rows, ``p2`` for
    the next rows up to ``selectivities[1]``, …, ``other`` for the rest."""
    order = np.random.default_rng(seed).permutation(n)
    tags = np.full(n, _OTHER, dtype=object)
    start = 0
    for j, share in enumerate(check_selectivities(selectivities)):
        end = max(start, round(share * n))
        tags[order[start:end]] = f"p{j + 1}"
        start = end
    return [str(t) for t in tags]


def tag_filter(j: int) -> Filter:
    """The filter that lets through the first ``j`` shares (``j`` ≥ 1)."""
    return {TAG_FIELD: [f"p{i + 1}" for i in range(j)]}


@dataclass(frozen=True)
class FilteredRow:
    """One selectivity: the share of rows the filter passes, recall@k, and the timing."""

    selectivity: float  # asked for (1.0: no filter)
    rows_passing: int
    recall: float  # mean recall@k against the exact filtered top-k
    recall_min: float
    short_queries: int  # queries answered with fewer than k rows although k rows pass
    outside_rows: int  # rows returned that the filter should have excluded (a filter bug)
    timing: Timed
    # the base rows each query got (-1 padded), kept for inspection, not written out
    found: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.empty(0))

    def to_dict(self) -> dict[str, Any]:
        return {"selectivity": self.selectivity, "rows_passing": self.rows_passing,
                "recall": self.recall, "recall_min": self.recall_min,
                "short_queries": self.short_queries, "outside_rows": self.outside_rows,
                **self.timing.to_dict()}


@dataclass(frozen=True)
class FilteredResult:
    store: str
    dataset: dict[str, Any]
    k: int
    strategy: str
    load_seconds: float
    rows: list[FilteredRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "dataset": self.dataset, "k": self.k,
                "filter_strategy": self.strategy, "load_seconds": self.load_seconds,
                "rows": [r.to_dict() for r in self.rows]}

    def markdown(self) -> str:
        d = self.dataset
        lines = [f"Filtered search on {self.store}: {d['rows']:,} rows × {d['dim']} dimensions, "
                 f"{d['queries']} queries, k = {self.k} (loaded in {self.load_seconds:.1f} s).",
                 f"How the store filters: {self.strategy}.", "",
                 f"| selectivity | rows passing | recall@{self.k} | min recall | short answers "
                 "| rows outside the filter | QPS | p50 ms | p99 ms |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in self.rows:
            t = r.timing
            lines.append(f"| {r.selectivity:.0%} | {r.rows_passing:,} | {r.recall:.4f} | "
                         f"{r.recall_min:.2f} | {r.short_queries} | {r.outside_rows} | "
                         f"{t.qps:,.0f} | "
                         f"{t.p50_ms:.2f} | {t.p99_ms:.2f} |")
        lines += ["", "recall: against the exact top-k among the rows that pass the filter "
                  "(brute force); short answers: queries that got fewer than k rows although "
                  "at least k pass the filter; rows outside the filter: returned rows the filter "
                  "should have excluded (0 unless the store's filter is wrong); QPS: one query "
                  "at a time."]
        return "\n".join(lines)


def run_filtered(store: VectorStore, data: Dataset, k: int, *,
                 selectivities: Sequence[float] = SELECTIVITIES, seed: int = 0) -> FilteredResult:
    """Write ``data.base`` into the (empty) ``store`` with selectivity tags, then measure the
    unfiltered search and each selectivity."""
    shares = check_selectivities(selectivities)
    n = data.base.shape[0]
    tags = selectivity_tags(n, shares, seed)
    t0 = time.perf_counter()
    for start in range(0, n, _WRITE_BATCH):
        part = data.base[start:start + _WRITE_BATCH]
        store.upsert(row_chunks(start, len(part), tags), part)
    load = time.perf_counter() - t0
    tag_array = np.asarray(tags, dtype=object)
    rows = [_measure(store, data, k, None, None, 1.0)]
    for j, share in enumerate(shares, start=1):
        passing = np.flatnonzero(np.isin(tag_array, [f"p{i + 1}" for i in range(j)]))
        rows.append(_measure(store, data, k, tag_filter(j), passing, share))
    dataset = {"name": data.name, "rows": n, "dim": int(data.base.shape[1]),
               "queries": int(data.queries.shape[0]), "seed": seed, "source": data.source}
    return FilteredResult(store.uri, dataset, k, filter_strategy(store), load, rows)


def _measure(store: VectorStore, data: Dataset, k: int, filter: Filter | None,
             passing: np.ndarray | None, share: float) -> FilteredRow:
    truth = exact_ids(data.base, data.queries, k, passing)
    found, timing = timed_search(store, data.queries, k, filter)
    recall = id_recall(found, truth, k)
    rows_passing = data.base.shape[0] if passing is None else len(passing)
    short = int(((found >= 0).sum(axis=1) < min(k, rows_passing)).sum())
    outside = 0 if passing is None else int(
        ((found >= 0) & ~np.isin(found, passing)).sum())
    return FilteredRow(share, rows_passing, float(recall.mean()), float(recall.min()), short,
                       outside, timing, found)
