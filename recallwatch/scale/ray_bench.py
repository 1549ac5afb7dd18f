"""``bench`` on Ray, with a driver whose memory does not grow with the base.

The command's process (the *driver*) never holds the vectors. One Ray task loads the dataset
(reading its files, generating a synthetic one from its seed, or exporting a store's vectors),
prepares the base and the queries and returns them into Ray's object store; the driver receives
references to them and the small facts it records (sizes, dimension, metric, the dataset's
hash). The exact ground truth is computed by Ray tasks that each search a shard of the stored
base, and merged in the driver (queries × k ids and distances: the size of the answer, not of
the base). Then every point of the sweep (one engine's build configuration, measured at each
query setting of its grid) is one Ray task, given the same stored inputs (read on its own node,
copied at most once per node): it builds its index, times it, computes its recalls and returns
its results only.

The results are those of one process (same order, same recalls, same index sizes, same
dataset hash); only the timings are the workers'.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallwatch.bench.engines import Space
from recallwatch.bench.exact_knn import (
    GroundTruth,
    check_inputs,
    prepare,
    read_cached,
    truth_key,
    write_cached,
)
from recallwatch.bench.sweep import (
    ConfigResult,
    Inputs,
    Point,
    SweepConfig,
    SweepResult,
    dataset_info,
    finish_sweep,
    load_dataset,
    measure_point,
    now_utc,
    space_of,
    sweep_depths,
    sweep_points,
    truth_cache,
)
from recallwatch.errors import RecallwatchError, UsageError
from recallwatch.formats.ann import Metric
from recallwatch.scale.ray_engine import (
    DEFAULT_SHARD_ROWS,
    merged_shards,
    require_ray,
    shard_topk,
)

__all__ = ["Loaded", "RayPoints", "RemoteInputs", "check_threads", "load_on_ray", "sweep_on_ray",
           "truth_on_ray"]


@dataclass(frozen=True)
class Loaded:
    """The dataset, loaded and prepared by a Ray task: the facts the results record, and
    references to the vectors in Ray's object store (the driver never fetches them)."""

    dataset: dict[str, Any]  # name, n, d, queries, metric, hash, source
    depths: list[int]  # the recall depths the base size allows
    truth_key: str  # the hash the exact truth is cached under ("" without a cache)
    loaded_by: int  # the process id of the Ray worker that loaded the data
    base: Any  # ObjectRef: the prepared base
    raw_queries: Any  # ObjectRef: the queries as read (what the exact truth is computed from)
    queries: Any  # ObjectRef: the prepared queries
    ids: Any  # ObjectRef: the names of the base rows, or None


@dataclass(frozen=True)
class RemoteInputs:
    """:class:`recallwatch.bench.sweep.Inputs` whose vectors stay in Ray's object store."""

    base: Any  # ObjectRef
    queries: Any  # ObjectRef
    truth: Any  # ObjectRef of the GroundTruth
    ids: Any  # ObjectRef
    depths: list[int]
    space: Space
    config: SweepConfig
    cwd: str  # the command's working folder: relative paths (a store URI's) are read from it


@contextlib.contextmanager
def _in_dir(path: str) -> Iterator[None]:
    """Relative paths (a store URI's folder, a sweep file's) read from the command's working
    folder, as in one process; a node without that folder reads from its own."""
    before = os.getcwd()
    moved = os.path.isdir(path)
    if moved:
        os.chdir(path)
    try:
        yield
    finally:
        if moved:
            os.chdir(before)


def _load(config: SweepConfig, cwd: str
          ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, list[str] | None]:
    """In a Ray task: the dataset loaded and checked as one process does, then prepared."""
    with _in_dir(cwd):
        data = load_dataset(config)
    depths = sweep_depths(config, data.base.shape[0])
    check_inputs(data.base, data.queries, max(depths))
    key = "" if config.cache is None else truth_key(data.base, data.queries, max(depths),
                                                     data.metric)
    facts = {"dataset": dataset_info(data), "depths": depths, "truth_key": key,
             "loaded_by": os.getpid()}
    return (facts, prepare(data.base, data.metric), data.queries,
            prepare(data.queries, data.metric), data.ids)


def load_on_ray(config: SweepConfig) -> Loaded:
    """Load and prepare the sweep's dataset in a Ray task on the command's own node (where its
    files are; another node if that one cannot run it), reserving the sweep's ``threads`` CPUs.
    The vectors stay in the object store; a recallwatch error in the task is raised here as it
    is."""
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
    task = ray.remote(num_cpus=config.threads, max_retries=0, num_returns=5)(_load)
    facts, base, raw_queries, queries, ids = task.options(scheduling_strategy=here).remote(
        config, os.getcwd())
    known = _result(ray, facts)
    return Loaded(known["dataset"], known["depths"], known["truth_key"], known["loaded_by"],
                  base, raw_queries, queries, ids)


def _slice_topk(base: np.ndarray, start: int, stop: int, queries: np.ndarray, k: int,
                metric: Metric, block: int) -> tuple[np.ndarray, np.ndarray]:
    """In a Ray task: one shard of the stored base (a view, not a copy) searched exactly."""
    return shard_topk(base[start:stop], start, queries, k, metric, block)


def truth_on_ray(loaded: Loaded, *, shard_rows: int = DEFAULT_SHARD_ROWS,
                 workers: int | None = None, block: int = 4096) -> GroundTruth:
    """The exact top-k of the loaded queries, as :func:`recallwatch.bench.exact_knn.ground_truth`
    computes it in one process (same bytes), from shards of the stored base."""
    ray = require_ray()
    task = ray.remote(num_cpus=1)(_slice_topk)
    k, metric = max(loaded.depths), loaded.dataset["metric"]
    found = merged_shards(
        lambda start, stop: task.remote(loaded.base, start, stop, loaded.raw_queries, k, metric,
                                        block),
        loaded.dataset["n"], k, metric, shard_rows=shard_rows, workers=workers)
    return GroundTruth(found.ids, found.distances, metric, k, loaded.truth_key)


def sweep_on_ray(
    config: SweepConfig,
    *,
    on_result: Callable[[ConfigResult], None] | None = None,
    workers: int | None = None,
    shard_rows: int = DEFAULT_SHARD_ROWS,
) -> SweepResult:
    """:func:`recallwatch.bench.sweep.run_sweep` on the connected Ray cluster, the driver
    holding no vectors: the same results, with the workers' timings."""
    ray = require_ray()
    check_threads(ray, config.threads)
    started = now_utc()
    loaded = load_on_ray(config)
    cache = truth_cache(config)
    k, metric = max(loaded.depths), loaded.dataset["metric"]
    t0 = time.perf_counter()
    truth = None if cache is None else read_cached(cache, loaded.truth_key, metric, k)
    if truth is None:
        truth = truth_on_ray(loaded, shard_rows=shard_rows, workers=workers)
        if cache is not None:
            write_cached(cache, truth)
    truth_seconds = time.perf_counter() - t0
    inputs = RemoteInputs(loaded.base, loaded.queries, ray.put(truth), loaded.ids, loaded.depths,
                          space_of(metric), config, os.getcwd())
    return finish_sweep(config, loaded.dataset, truth_seconds,
                        RayPoints(workers)(sweep_points(config), inputs), started, on_result)


def _largest_node_cpus(ray: Any) -> float:
    return max((float(n.get("Resources", {}).get("CPU", 0)) for n in ray.nodes() if n["Alive"]),
               default=0.0)


def check_threads(ray: Any, threads: int) -> None:
    """UsageError when no node of the cluster has the sweep's ``threads`` CPUs."""
    largest = _largest_node_cpus(ray)
    if threads > largest:
        raise UsageError(f"the sweep's threads ({threads}) exceed the CPUs of every node of "
                         f"the Ray cluster (at most {largest:g} on one node): give --threads "
                         f"{max(1, int(largest))} or fewer, or start nodes with more CPUs")


def _measure(point: Point, base: np.ndarray, queries: np.ndarray, truth: GroundTruth,
             ids: list[str] | None, depths: list[int], space: Space, config: SweepConfig,
             cwd: str) -> list[ConfigResult]:
    """In a Ray task: one point measured on the stored inputs, as in one process."""
    with _in_dir(cwd):
        return measure_point(point, Inputs(base, queries, truth, depths, space, ids, config))


@dataclass
class RayPoints:
    """The sweep's points on the connected Ray cluster: one task per point, each reserving the
    sweep's ``threads`` CPUs (so that the batched timings and the builds run on the CPUs the
    sweep says), at most ``workers`` running at once (default: as many as the cluster's CPUs
    hold). Results come back in the order of the points."""

    workers: int | None = None

    def __call__(self, points: Sequence[Point], inputs: RemoteInputs
                 ) -> Iterator[list[ConfigResult]]:
        ray = require_ray()
        threads = inputs.config.threads
        check_threads(ray, threads)
        task = ray.remote(num_cpus=threads, max_retries=0)(_measure)
        cpus = float(ray.cluster_resources().get("CPU", threads))
        limit = self.workers or max(1, int(cpus // threads))
        shared = (inputs.base, inputs.queries, inputs.truth, inputs.ids, inputs.depths,
                  inputs.space, inputs.config, inputs.cwd)
        pending = list(points)
        running: dict[Any, int] = {}
        done: dict[int, list[ConfigResult]] = {}
        nxt = 0
        submitted = 0
        while nxt < len(pending):
            while submitted < len(pending) and len(running) < limit:
                running[task.remote(pending[submitted], *shared)] = submitted
                submitted += 1
            finished, _ = ray.wait(list(running), num_returns=1)
            for obj in finished:
                done[running.pop(obj)] = _result(ray, obj)
            while nxt in done:
                yield done.pop(nxt)
                nxt += 1


def _result(ray: Any, obj: Any) -> Any:
    """A task's result; recallwatch's own errors raised in a task reach the user as they are
    (a missing file, a wrong parameter, a store that refuses), not wrapped in Ray's report of
    the task."""
    try:
        return ray.get(obj)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, RecallwatchError):
            raise cause from None
        raise

