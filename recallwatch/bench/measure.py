"""Timing and memory: one query at a time, batched, and under concurrent load.

Latency percentiles come from per-query timings (``perf_counter`` around each call), never from
a batch divided by its size. CPU time is the process's (``process_time``): all its threads.

One-query-at-a-time timings are repeated in rounds (:func:`time_single_rounds`): in each round
every query setting of a built index is timed in turn, the order rotating, so that a burst of
load on a shared machine falls on all the settings alike instead of on one of them. A setting's
QPS is the median of its rounds, its spread the range of its rounds (:class:`Rounds`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallwatch.bench.engines.base import Engine
from recallwatch.errors import UsageError

__all__ = ["DEFAULT_ROUNDS", "Latency", "LoadPoint", "Rounds", "Timing", "latency_of",
           "load_test", "rss_bytes", "summarise_rounds", "time_batch", "time_single",
           "time_single_rounds"]

#: Rounds of the one-query-at-a-time timing by default. Two settings of the same speed have
#: rounds that do not overlap with probability 2 / C(2r, r): 0.8 % at 5 rounds.
DEFAULT_ROUNDS = 5
MAX_ROUNDS = 100

MAX_LOAD_SECONDS = 120.0
MAX_LOAD_THREADS = 256


def rss_bytes() -> int | None:
    """Resident set size of this process (psutil, or /proc on Linux); None when unknown."""
    try:
        import psutil
    except ImportError:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None
    return int(psutil.Process().memory_info().rss)


@dataclass(frozen=True)
class Latency:
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


def latency_of(seconds: np.ndarray) -> Latency:
    ms = np.asarray(seconds, dtype=np.float64) * 1e3
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return Latency(float(ms.mean()), float(p50), float(p95), float(p99))


@dataclass(frozen=True)
class Timing:
    queries: int
    wall_seconds: float
    cpu_seconds: float

    @property
    def qps(self) -> float:
        return self.queries / self.wall_seconds if self.wall_seconds > 0 else float("inf")

    @property
    def cpu_seconds_per_1000(self) -> float:
        return 1000.0 * self.cpu_seconds / self.queries


def time_single(
    engine: Engine, queries: np.ndarray, k: int, *, warmup: int = 10
) -> tuple[Timing, np.ndarray]:
    """Each query alone, in order, on the engine's current threads; per-query seconds too."""
    search = engine.search_one
    clock = time.perf_counter
    for q in queries[:warmup]:
        search(q, k)
    per_query = np.empty(len(queries), dtype=np.float64)
    cpu0, start = time.process_time(), clock()
    for i, q in enumerate(queries):
        t0 = clock()
        search(q, k)
        per_query[i] = clock() - t0
    wall = clock() - start
    return Timing(len(queries), wall, time.process_time() - cpu0), per_query


def time_batch(engine: Engine, queries: np.ndarray, k: int, *, repeats: int = 1
               ) -> tuple[Timing, np.ndarray]:
    """All queries in one call (best of ``repeats``), and the answer."""
    best: Timing | None = None
    found = np.empty((0, k), dtype=np.int64)
    for _ in range(max(1, repeats)):
        cpu0, t0 = time.process_time(), time.perf_counter()
        found = engine.search(queries, k)
        timing = Timing(len(queries), time.perf_counter() - t0, time.process_time() - cpu0)
        if best is None or timing.wall_seconds < best.wall_seconds:
            best = timing
    assert best is not None  # the loop ran at least once
    return best, found


def time_single_rounds(
    engine: Engine, settings: Sequence[Mapping[str, Any]], queries: np.ndarray, k: int, *,
    rounds: int = DEFAULT_ROUNDS, warmup: int = 10,
    timer: Callable[[Engine, np.ndarray, int], tuple[Timing, np.ndarray]] | None = None,
) -> list[list[tuple[Timing, np.ndarray]]]:
    """Each query setting timed one query at a time, ``rounds`` times, interleaved: in round
    ``r`` the settings run in order starting from setting ``r mod n``. ``out[i][r]`` is setting
    ``i``'s round ``r`` (:func:`time_single`'s result). ``timer`` replaces :func:`time_single`
    (tests give measurements instead of taking them)."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise UsageError(f"timing rounds must be 1..{MAX_ROUNDS}, found {rounds}")

    def default(e: Engine, q: np.ndarray, depth: int) -> tuple[Timing, np.ndarray]:
        return time_single(e, q, depth, warmup=warmup)

    measure = timer or default
    out: list[list[tuple[Timing, np.ndarray]]] = [[] for _ in settings]
    n = len(settings)
    for r in range(rounds):
        for i in [(r + j) % n for j in range(n)]:
            engine.set_query_params(settings[i])
            out[i].append(measure(engine, queries, k))
    return out


@dataclass(frozen=True)
class Rounds:
    """A setting's one-query-at-a-time timings over its rounds."""

    qps: list[float]  # each round's QPS
    cpu_s_per_1000: list[float]
    latency: Latency  # over every call of every round
    p50: dict[str, Any]  # the median latency with its 95 % interval (QuantileInterval.to_dict)
    p99: dict[str, Any] | None  # the same for p99, None when the calls cannot bound it

    @property
    def rounds(self) -> int:
        return len(self.qps)

    @property
    def qps_median(self) -> float:
        return float(np.median(self.qps))

    def to_dict(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "qps": list(self.qps),
                "qps_range": [min(self.qps), max(self.qps)],
                "cpu_s_per_1000": list(self.cpu_s_per_1000), "p50_ms": self.p50,
                "p99_ms": self.p99}


def summarise_rounds(timed: Sequence[tuple[Timing, np.ndarray]]) -> Rounds:
    """The rounds of one setting: QPS per round, latency over every call."""
    from recallwatch.stats import quantile_interval

    ms = np.concatenate([np.asarray(per_query, dtype=np.float64) for _, per_query in timed])
    p99 = quantile_interval(ms * 1e3, 0.99)
    return Rounds([t.qps for t, _ in timed], [t.cpu_seconds_per_1000 for t, _ in timed],
                  latency_of(ms), quantile_interval(ms * 1e3, 0.5).to_dict(),
                  p99.to_dict() if p99.bounded else None)


@dataclass(frozen=True)
class LoadPoint:
    threads: int
    seconds: float
    queries: int
    qps: float
    p50_ms: float
    p99_ms: float
    errors: int


def load_test(
    engine: Engine, queries: np.ndarray, k: int, *, threads: int, seconds: float
) -> LoadPoint:
    """``threads`` clients each sending one query at a time for ``seconds`` (bounded); every
    call's latency is kept. Errors are counted, not raised, so one refusal does not end the run."""
    if not 1 <= threads <= MAX_LOAD_THREADS:
        raise UsageError(f"load test threads must be 1..{MAX_LOAD_THREADS}, found {threads}")
    if not 0 < seconds <= MAX_LOAD_SECONDS:
        raise UsageError(f"load test duration must be in (0, {MAX_LOAD_SECONDS:g}] seconds, "
                         f"found {seconds}")
    latencies: list[list[float]] = [[] for _ in range(threads)]
    errors = [0] * threads
    start_gate = threading.Barrier(threads + 1)
    deadline = [0.0]

    def client(slot: int) -> None:
        clock = time.perf_counter
        own = latencies[slot]
        i = slot
        start_gate.wait()
        while clock() < deadline[0]:
            t0 = clock()
            try:
                engine.search_one(queries[i % len(queries)], k)
            except Exception:  # a refused or failed call is a measured outcome here
                errors[slot] += 1
            own.append(clock() - t0)
            i += threads

    workers = [threading.Thread(target=client, args=(s,), daemon=True) for s in range(threads)]
    for w in workers:
        w.start()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    start_gate.wait()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    flat = np.concatenate([np.asarray(x) for x in latencies]) if any(latencies) else np.zeros(1)
    count = sum(len(x) for x in latencies)
    p50, p99 = (float(v) for v in np.percentile(flat * 1e3, [50, 99]))
    return LoadPoint(threads, elapsed, count, count / elapsed, p50, p99, sum(errors))
