"""What the filtered and the streaming benchmarks share (:mod:`recallwatch.bench.filtered`,
:mod:`recallwatch.bench.streaming`): they measure a store's *own* search, so they write their
rows into a store they own (a new, empty one), time each query through the VectorStore protocol,
and compare the answers with the exact answer computed here by brute force over the rows that
should be searchable (those the filter lets through, or those inserted so far).

Each row is a chunk named ``r000000042`` (row 42 of the base) whose ``domain`` metadata field
holds the row's filter tag; the filter a benchmark passes is the store's ordinary equality filter
on that field, which every adapter runs in its engine (LanceDB SQL, a PostgreSQL ``WHERE``, a
Qdrant or Milvus filter, a Chroma ``where``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.bench.exact_knn import ground_truth
from recallwatch.bench.measure import latency_of
from recallwatch.errors import UsageError
from recallwatch.stores.base import Chunk, Filter, SupportsFilteredSearch

if TYPE_CHECKING:
    from recallwatch.stores.base import VectorStore

__all__ = ["TAG_FIELD", "Timed", "exact_ids", "filter_strategy", "open_empty", "row_chunks",
           "row_numbers", "timed_search"]

TAG_FIELD = "domain"  # the metadata field that holds each row's filter tag
_PREFIX = "r"
_WARMUP = 5  # queries run before the timed ones (connections, caches, lazy imports)


def row_chunks(start: int, count: int, tags: Sequence[str] | None = None) -> list[Chunk]:
    """The chunks of base rows ``start`` .. ``start + count - 1`` (no text: only the vectors
    are searched), each tagged with its filter tag when ``tags`` (indexed by row) is given."""
    return [Chunk(id=f"{_PREFIX}{i:09d}", text="", content_hash=str(i),
                  domain=None if tags is None else tags[i])
            for i in range(start, start + count)]


def row_numbers(ids: Sequence[str], k: int) -> np.ndarray:
    """The base rows a store's answer names, padded with -1 to ``k`` (an id the benchmark did
    not write counts as a miss)."""
    out = np.full(k, -1, dtype=np.int64)
    for n, name in enumerate(ids[:k]):
        digits = name[len(_PREFIX):]
        if name.startswith(_PREFIX) and digits.isdigit():
            out[n] = int(digits)
    return out


def open_empty(uri: str) -> VectorStore:
    """The store the benchmark writes into, created if missing; refused when it holds rows (the
    benchmark never mixes its rows with a store's own data)."""
    from recallwatch.stores import open_store

    store = open_store(uri, create=True)
    rows = store.count()
    if rows:
        store.close()
        raise UsageError(
            f"{store.uri} already holds {rows:,} chunks: the benchmark writes its own rows and "
            "needs a new, empty store or table, e.g. lancedb://./bench-store?table=bench")
    return store


def filter_strategy(store: VectorStore) -> str:
    """How the store applies a filter during an ANN search, in its own words, or a note that
    the adapter does not say."""
    if isinstance(store, SupportsFilteredSearch):
        return store.filter_strategy()
    return "the adapter filters in its engine but does not say how (before or after the ANN search)"


def exact_ids(base: np.ndarray, queries: np.ndarray, k: int,
              rows: np.ndarray | None = None) -> np.ndarray:
    """Exact top-``k`` base rows of each query by cosine among ``rows`` (default all), padded with
    -1 when fewer than ``k`` rows qualify: brute force, the truth every recall is measured
    against."""
    chosen = np.arange(base.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    out = np.full((queries.shape[0], k), -1, dtype=np.int64)
    depth = min(k, len(chosen))
    if depth == 0:
        return out
    truth = ground_truth(base[chosen], queries, depth, "cosine")
    out[:, :depth] = np.where(truth.ids >= 0, chosen[np.maximum(truth.ids, 0)], -1)
    return out


@dataclass(frozen=True)
class Timed:
    """Queries run one at a time: how many, their wall time, and latency percentiles."""

    queries: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def qps(self) -> float:
        return self.queries / self.seconds if self.seconds > 0 else float("inf")

    @classmethod
    def of(cls, per_query: Sequence[float] | np.ndarray, seconds: float) -> Timed:
        if len(per_query) == 0:
            return cls(0, seconds, float("nan"), float("nan"))
        lat = latency_of(np.asarray(per_query, dtype=np.float64))
        return cls(len(per_query), seconds, lat.p50_ms, lat.p99_ms)

    def to_dict(self) -> dict[str, Any]:
        """As JSON values: no query, no figures (null rather than NaN, which JSON lacks)."""
        if not self.queries:
            return {"queries": 0, "seconds": self.seconds, "qps": None, "p50_ms": None,
                    "p99_ms": None}
        return {"queries": self.queries, "seconds": self.seconds, "qps": self.qps,
                "p50_ms": self.p50_ms, "p99_ms": self.p99_ms}


def timed_search(store: VectorStore, queries: np.ndarray, k: int,
                 filter: Filter | None = None, *, warmup: int = _WARMUP
                 ) -> tuple[np.ndarray, Timed]:
    """Each query alone through ``store.search`` (its ANN path, with ``filter``): the base rows
    it returned (-1 padded to ``k``) and the timing."""
    for q in queries[:warmup]:
        store.search(q[None, :], k, filter=filter)
    found = np.full((len(queries), k), -1, dtype=np.int64)
    per_query = np.empty(len(queries), dtype=np.float64)
    clock = time.perf_counter
    start = clock()
    for n, q in enumerate(queries):
        t0 = clock()
        hits = store.search(q[None, :], k, filter=filter)[0]
        per_query[n] = clock() - t0
        found[n] = row_numbers(hits.ids, k)
    return found, Timed.of(per_query, clock() - start)
