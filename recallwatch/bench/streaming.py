"""Streaming: recall and latency while rows are being inserted (insert-while-search), and after
the stream ends.

A first share of the base is written in one go (the store builds its ANN index on it, when its
settings say so); the rest arrives in batches. While a batch is being inserted (by a second
handle on the store, in a second thread, as another process would write), queries run one at a
time and their latencies are kept: the latency under writes. Once the batch is in, every query
runs once more and its answer is compared with the exact top-k over the rows inserted so far
(brute force): recall@k at that step, with its latency. The last step is the state after the
stream ends.

How a store absorbs the new rows decides the figures: LanceDB keeps rows written after its index
was built outside the index and searches them exactly (recall stays up, latency grows until the
index is rebuilt); pgvector inserts them into its HNSW graph row by row (a batch of 1,000 rows or
more makes the adapter drop the index and rebuild it at the next search, so the batches should
stay smaller to measure the graph's own inserts).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.bench.exact_knn import id_recall
from recallwatch.bench.live import Timed, exact_ids, row_chunks, row_numbers, timed_search
from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.bench.datasets import Dataset
    from recallwatch.stores.base import VectorStore

__all__ = ["StreamResult", "StreamStep", "run_streaming"]


@dataclass(frozen=True)
class StreamStep:
    """The state after one batch: rows searchable, recall@k against the exact top-k over them,
    latency then, and latency while the batch was being inserted."""

    batch: int  # 0: the first load
    rows: int
    insert_seconds: float
    recall: float
    recall_min: float
    after: Timed  # the queries once the batch is in
    during: Timed  # the queries that ran while it was being inserted (none for the first load)
    # the base rows each query got once the batch was in (-1 padded), not written out
    found: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.empty(0))

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "rows": self.rows, "insert_seconds": self.insert_seconds,
                "recall": self.recall, "recall_min": self.recall_min,
                "after": self.after.to_dict(), "during_insert": self.during.to_dict()}


@dataclass(frozen=True)
class StreamResult:
    store: str
    dataset: dict[str, Any]
    k: int
    initial: int
    batch_size: int
    steps: list[StreamStep] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "dataset": self.dataset, "k": self.k,
                "initial_rows": self.initial, "batch_rows": self.batch_size,
                "steps": [s.to_dict() for s in self.steps],
                "after_stream": self.steps[-1].to_dict() if self.steps else None}

    def markdown(self) -> str:
        d = self.dataset
        lines = [f"Streaming on {self.store}: {d['rows']:,} rows × {d['dim']} dimensions "
                 f"({self.initial:,} loaded first, then batches of {self.batch_size:,}), "
                 f"{d['queries']} queries, k = {self.k}.", "",
                 f"| batch | rows | insert s | recall@{self.k} | min recall | p50 ms | p99 ms "
                 "| queries during insert | p50 ms during | p99 ms during |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in self.steps:
            a, w = s.after, s.during
            during = (f"{w.queries} | {w.p50_ms:.2f} | {w.p99_ms:.2f}" if w.queries
                      else "0 | — | —")
            lines.append(f"| {s.batch} | {s.rows:,} | {s.insert_seconds:.2f} | {s.recall:.4f} | "
                         f"{s.recall_min:.2f} | {a.p50_ms:.2f} | {a.p99_ms:.2f} | {during} |")
        if self.steps:
            last = self.steps[-1]
            lines += ["", f"After the stream ends ({last.rows:,} rows): recall@{self.k} "
                      f"{last.recall:.4f}, p50 {last.after.p50_ms:.2f} ms, p99 "
                      f"{last.after.p99_ms:.2f} ms."]
        lines += ["", "recall: against the exact top-k over the rows inserted so far (brute "
                  "force); during insert: queries run one at a time while the batch was being "
                  "written by a second handle on the store."]
        return "\n".join(lines)


def run_streaming(uri: str, writer: VectorStore, data: Dataset, k: int, *, initial: int,
                  batch: int) -> StreamResult:
    """Stream ``data.base`` into the empty store ``writer`` (opened on ``uri``): ``initial``
    rows first, then batches of ``batch`` rows, searched through a second handle on ``uri``."""
    n = data.base.shape[0]
    if not 1 <= initial <= n:
        raise UsageError(f"the first load must be 1 to {n:,} rows (the base), found {initial:,}")
    if batch < 1:
        raise UsageError(f"batch must be at least 1 row, found {batch}")
    from recallwatch.stores import open_store

    t0 = time.perf_counter()
    writer.upsert(row_chunks(0, initial), data.base[:initial])
    steps = []
    reader = open_store(uri)
    try:
        steps.append(_step(reader, data, k, 0, initial, time.perf_counter() - t0, Timed.of([], 0)))
        done = initial
        while done < n:
            end = min(n, done + batch)
            seconds, during = _insert_while_searching(writer, reader, data, k, done, end)
            steps.append(_step(reader, data, k, len(steps), end, seconds, during))
            done = end
    finally:
        reader.close()
    dataset = {"name": data.name, "rows": n, "dim": int(data.base.shape[1]),
               "queries": int(data.queries.shape[0]), "source": data.source}
    return StreamResult(writer.uri, dataset, k, initial, batch, steps)


def _step(reader: VectorStore, data: Dataset, k: int, number: int, rows: int,
          insert_seconds: float, during: Timed) -> StreamStep:
    truth = exact_ids(data.base[:rows], data.queries, k)
    found, after = timed_search(reader, data.queries, k)
    recall = id_recall(found, truth, k)
    return StreamStep(number, rows, insert_seconds, float(recall.mean()), float(recall.min()),
                      after, during, found)


def _insert_while_searching(writer: VectorStore, reader: VectorStore, data: Dataset, k: int,
                            start: int, end: int) -> tuple[float, Timed]:
    """Insert rows ``start``..``end`` in a second thread while queries run here, one at a time,
    until the insert is done; returns the insert's seconds and the queries' timing."""
    failure: list[BaseException] = []
    insert_seconds = [0.0]

    def insert() -> None:
        t0 = time.perf_counter()
        try:
            writer.upsert(row_chunks(start, end - start), data.base[start:end])
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)
        insert_seconds[0] = time.perf_counter() - t0

    thread = threading.Thread(target=insert, name="recallwatch-stream-insert", daemon=True)
    latencies: list[float] = []
    clock = time.perf_counter
    t_start = clock()
    thread.start()
    n = 0
    while thread.is_alive():
        q = data.queries[n % len(data.queries)]
        t0 = clock()
        hits = reader.search(q[None, :], k)[0]
        latencies.append(clock() - t0)
        row_numbers(hits.ids, k)  # the answer is read as the measured queries read it
        n += 1
    thread.join()
    if failure:
        raise failure[0]
    return insert_seconds[0], Timed.of(latencies, clock() - t_start)
