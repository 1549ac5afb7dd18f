"""A sweep: one dataset, exact truth, every engine configuration (build × query parameters) timed
on one machine. The file is read and checked by :mod:`recallwatch.bench.sweep_file`.

Per configuration: recall@1/10/100 by id and tie-aware; QPS one query at a time on one thread
(the median of ``rounds`` rounds, the query settings of one build interleaved round by round, with
the range of the rounds as its spread) and batched on ``threads``; latency mean/p50/p95/p99 from
the single-query timings of every round, p50 and p99 with their 95 % intervals; CPU-seconds per
1,000 queries; build time; index bytes as the library reports or serialises them, and the RSS
delta around the build, each labelled; bytes per vector; for store engines, a concurrent load
test per thread count.
"""

from __future__ import annotations

import gc
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._hashing import canonical_hash
from recallwatch._progress import progress
from recallwatch.bench.datasets import Dataset, dataset_from_spec
from recallwatch.bench.engines import Space, make_engine
from recallwatch.bench.exact_knn import (
    GroundTruth,
    ground_truth,
    id_recall,
    prepare,
    tie_aware_recall,
)
from recallwatch.bench.measure import (
    Latency,
    LoadPoint,
    Rounds,
    load_test,
    rss_bytes,
    summarise_rounds,
    time_batch,
    time_single_rounds,
)
from recallwatch.bench.sweep_file import EngineSpec, SweepConfig, load_sweep
from recallwatch.errors import InputError

__all__ = [
    "ConfigResult",
    "EngineSpec",
    "Inputs",
    "Point",
    "SweepConfig",
    "SweepResult",
    "cpu_model",
    "dataset_info",
    "finish_sweep",
    "load_dataset",
    "load_sweep",
    "machine_info",
    "measure_point",
    "now_utc",
    "run_locally",
    "run_sweep",
    "space_of",
    "sweep_depths",
    "sweep_points",
    "truth_cache",
]

SCHEMA_VERSION = 1  # of the results file


@dataclass(frozen=True)
class ConfigResult:
    """One engine configuration, measured. Recall and QPS always travel together."""

    engine: str
    label: str
    build: dict[str, Any]
    query: dict[str, Any]
    k: int
    recall: dict[int, float]  # id recall@depth
    recall_ties: dict[int, float]  # tie-aware recall@depth
    qps_single: float  # the median of the rounds
    qps_batch: float
    latency: Latency  # from single-query timings, one thread, every round
    cpu_s_per_1000_single: float
    cpu_s_per_1000_batch: float
    build_seconds: float
    index_bytes: int | None
    index_bytes_how: str | None
    rss_delta_bytes: int | None  # RSS after build minus before (approximate: allocator reuse)
    bytes_per_vector: float | None
    load: list[LoadPoint] = field(default_factory=list)
    # the rounds of the single-query timing: QPS of each, latency p50/p99 with intervals
    timing: dict[str, Any] = field(default_factory=dict)

    @property
    def qps_rounds(self) -> list[float]:
        """Each round's QPS-1 (the one measurement of a result without rounds)."""
        return list(self.timing.get("qps") or [self.qps_single])

    @property
    def params(self) -> str:
        both = {**self.build, **self.query}
        return " ".join(f"{k}={v}" for k, v in both.items())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["recall"] = {str(k): v for k, v in self.recall.items()}
        d["recall_ties"] = {str(k): v for k, v in self.recall_ties.items()}
        return d


@dataclass(frozen=True)
class SweepResult:
    name: str
    dataset: dict[str, Any]
    k: int
    threads: dict[str, Any]
    machine: dict[str, Any]
    config: dict[str, Any]
    config_hash: str
    truth_seconds: float
    results: list[ConfigResult]
    targets: list[float]
    started: str
    finished: str


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(packages: Sequence[str] = ("faiss", "hnswlib", "usearch")) -> dict[str, Any]:
    """Where the figures were measured: they are only comparable on the same machine. Every
    benchmark records this, with the versions of the ``packages`` it exercised."""
    info: dict[str, Any] = {
        "platform": platform.platform(), "processor": cpu_model(), "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()), "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for module in packages:
        try:
            info[module] = getattr(__import__(module), "__version__", "unknown")
        except ImportError:
            info[module] = None
    return info


def thread_settings(threads: int) -> dict[str, Any]:
    """The thread counts in force (BLAS variables are read when numpy loads, so they are
    recorded as found; set them before starting Python to pin BLAS)."""
    import faiss

    env = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                          "MKL_NUM_THREADS")}
    return {"single": 1, "batched_and_build": threads, "exact_truth": threads,
            "faiss_omp_max": faiss.omp_get_max_threads(), "env": env}


@dataclass(frozen=True)
class Point:
    """One build configuration of one engine: built once, then measured at every query setting
    of its grid. The unit of work a sweep hands out (to a Ray task with ``--engine ray``)."""

    spec: EngineSpec
    build: dict[str, Any]


@dataclass(frozen=True)
class Inputs:
    """What every point is measured on: the prepared base and queries, the exact truth (in this
    process, or rebuilt inside a Ray task from what the object store holds)."""

    base: np.ndarray
    queries: np.ndarray
    truth: GroundTruth
    depths: list[int]
    space: Space
    ids: list[str] | None
    config: SweepConfig


def sweep_points(config: SweepConfig) -> list[Point]:
    """Every build configuration of every engine, in the sweep file's order."""
    return [Point(spec, build) for spec in config.engines for build in spec.builds]


def run_locally(points: Sequence[Point], inputs: Inputs) -> Iterator[list[ConfigResult]]:
    """The points one after another in this process."""
    for point in points:
        yield measure_point(point, inputs)


def load_dataset(config: SweepConfig) -> Dataset:
    """The dataset the sweep file's ``dataset:`` section describes (paths from the file's
    folder)."""
    return dataset_from_spec(config.dataset, source=config.source, base_dir=Path(config.base_dir))


def sweep_depths(config: SweepConfig, n: int) -> list[int]:
    """The recall depths that a base of ``n`` rows allows; InputError if ``k`` exceeds it."""
    if config.k > n:
        raise InputError(source=config.source, field="k", expected=f"k ≤ {n} (the base size)",
                         found=config.k)
    return [d for d in config.recall_at if d <= n]


def truth_cache(config: SweepConfig) -> Path | None:
    """The folder the sweep caches its exact ground truth in (the file's ``cache``), if any."""
    return None if config.cache is None else Path(config.base_dir) / config.cache


def space_of(metric: str) -> Space:
    """How the engines compare the prepared vectors: l2, or inner product (cosine included)."""
    return "l2" if metric == "l2" else "ip"


def dataset_info(data: Dataset) -> dict[str, Any]:
    """What the results record of the dataset (its hash reads every byte once)."""
    return {"name": data.name, "n": int(data.base.shape[0]), "d": int(data.base.shape[1]),
            "queries": int(data.queries.shape[0]), "metric": data.metric, "hash": data.hash,
            "source": data.source}


def now_utc() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def run_sweep(
    config: SweepConfig,
    *,
    dataset: Dataset | None = None,
    on_result: Callable[[ConfigResult], None] | None = None,
) -> SweepResult:
    """Run every configuration of ``config`` (on ``dataset`` if given, else its own) in this
    process. :func:`recallwatch.scale.ray_bench.sweep_on_ray` gives the same results on Ray."""
    started = now_utc()
    data = dataset or load_dataset(config)
    depths = sweep_depths(config, data.base.shape[0])
    t0 = time.perf_counter()
    truth = ground_truth(data.base, data.queries, max(depths), data.metric,
                         cache_dir=truth_cache(config), threads=config.threads)
    truth_seconds = time.perf_counter() - t0
    info = dataset_info(data)
    inputs = Inputs(prepare(data.base, data.metric), prepare(data.queries, data.metric), truth,
                    depths, space_of(data.metric), data.ids, config)
    del data
    return finish_sweep(config, info, truth_seconds, run_locally(sweep_points(config), inputs),
                        started, on_result)


def finish_sweep(config: SweepConfig, dataset: dict[str, Any], truth_seconds: float,
                 parts: Iterator[list[ConfigResult]], started: str,
                 on_result: Callable[[ConfigResult], None] | None = None) -> SweepResult:
    """Collect the points' results as they come (each reported to ``on_result``) into the
    sweep's result, with the machine and thread settings of this process."""
    results: list[ConfigResult] = []
    total = sum(len(p.spec.queries) for p in sweep_points(config))
    # a configuration is built once and measured at each query setting: the bar counts those,
    # redrawn only between them (timed: never while a latency is measured)
    with progress(total, f"bench {config.name}: configurations measured", timed=True
                  ) as advance:
        for part in parts:
            for result in part:
                results.append(result)
                advance()
                if on_result is not None:
                    on_result(result)
    return SweepResult(config.name, dataset, config.k, thread_settings(config.threads),
                       machine_info(), config.raw, canonical_hash(config.raw),
                       truth_seconds, results, config.targets, started, now_utc())


def measure_point(point: Point, inputs: Inputs) -> list[ConfigResult]:
    """Build ``point``'s index on the base and measure it at every query setting of its grid:
    recall, batched QPS and load once per setting, then the single-query timing in interleaved
    rounds across the settings."""
    config, xb = inputs.config, inputs.base
    engine = make_engine(point.spec.engine, **point.build)
    engine.set_threads(config.threads)
    gc.collect()
    rss0 = rss_bytes()
    b0 = time.perf_counter()
    engine.build(xb, inputs.space, inputs.ids)
    build_seconds = time.perf_counter() - b0
    rss1 = rss_bytes()
    memory = engine.memory()
    rss_delta = None if rss0 is None or rss1 is None else rss1 - rss0
    try:
        settings = [engine.set_query_params(query) for query in point.spec.queries]
        fixed = []
        for query in settings:
            engine.set_query_params(query)
            fixed.append(_untimed(engine, inputs))
        single_q = (inputs.queries if config.single_queries is None
                    else inputs.queries[:config.single_queries])
        engine.set_threads(1)
        rounds = time_single_rounds(engine, settings, single_q, config.k, rounds=config.rounds,
                                    warmup=config.warmup)
        engine.set_threads(config.threads)
        return [_result(point, query, parts, summarise_rounds(timed), inputs, build_seconds,
                        memory, rss_delta)
                for query, parts, timed in zip(settings, fixed, rounds, strict=True)]
    finally:
        engine.close()


@dataclass(frozen=True)
class _Untimed:
    """What one query setting measures once: recall, the batched timing, the load test."""

    recall: dict[int, float]
    ties: dict[int, float]
    batch: Any  # measure.Timing
    load: list[LoadPoint]


def _untimed(engine: Any, inputs: Inputs) -> _Untimed:
    config, xb, xq, truth = inputs.config, inputs.base, inputs.queries, inputs.truth
    k = config.k
    engine.set_threads(config.threads)
    batch, found = time_batch(engine, xq, k, repeats=config.batch_repeats)
    recall: dict[int, float] = {}
    ties: dict[int, float] = {}
    for depth in inputs.depths:
        answer = found if depth == k else engine.search(xq, depth)
        recall[depth] = float(id_recall(answer, truth.ids, depth).mean())
        ties[depth] = float(tie_aware_recall(answer, truth, xb, xq, depth).mean())
    load: list[LoadPoint] = []
    if engine.is_store:
        load = [load_test(engine, xq, k, threads=t, seconds=config.load_seconds)
                for t in config.load_threads]
    return _Untimed(recall, ties, batch, load)


def _result(point: Point, query: dict[str, Any], parts: _Untimed, timed: Rounds,
            inputs: Inputs, build_seconds: float, memory: Any,
            rss_delta: int | None) -> ConfigResult:
    index_bytes = None if memory is None else memory.bytes
    return ConfigResult(
        engine=point.spec.engine, label=point.spec.label, build=dict(point.build),
        query=dict(query), k=inputs.config.k, recall=parts.recall, recall_ties=parts.ties,
        qps_single=timed.qps_median, qps_batch=parts.batch.qps, latency=timed.latency,
        cpu_s_per_1000_single=float(np.median(timed.cpu_s_per_1000)),
        cpu_s_per_1000_batch=parts.batch.cpu_seconds_per_1000, build_seconds=build_seconds,
        index_bytes=index_bytes, index_bytes_how=None if memory is None else memory.how,
        rss_delta_bytes=rss_delta,
        bytes_per_vector=None if index_bytes is None else index_bytes / inputs.base.shape[0],
        load=parts.load, timing=timed.to_dict())
