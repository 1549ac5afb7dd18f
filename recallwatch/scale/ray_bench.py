"""``bench`` on Ray: every point of a sweep (one engine's build configuration, measured at each
query setting of its grid) is one Ray task.

The prepared base, the queries and the exact truth are put into Ray's object store once; every
task reads them from there (on its own node, copied at most once per node), builds its index,
times it and computes its recalls, and returns its results only. The command's process holds no
index and, once the inputs are in the object store, no vectors: its memory does not grow with the
base or the number of points. The results are those of one process (same order, same recalls,
same index sizes); only the timings are the worker's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from recallwatch.bench.sweep import ConfigResult, Inputs, Point, measure_point
from recallwatch.errors import RecallwatchError, UsageError
from recallwatch.scale.ray_engine import require_ray

__all__ = ["RayPoints"]


def _largest_node_cpus(ray: Any) -> float:
    return max((float(n.get("Resources", {}).get("CPU", 0)) for n in ray.nodes() if n["Alive"]),
               default=0.0)


@dataclass
class RayPoints:
    """A :data:`recallwatch.bench.sweep.PointRunner` on the connected Ray cluster: one task per
    point, each reserving the sweep's ``threads`` CPUs (so that the batched timings and the builds
    run on the CPUs the sweep says), at most ``workers`` running at once (default: as many as the
    cluster's CPUs hold). Results come back in the order of the points."""

    workers: int | None = None

    def __call__(self, points: Sequence[Point], inputs: Inputs
                 ) -> Iterator[list[ConfigResult]]:
        ray = require_ray()
        threads = inputs.config.threads
        largest = _largest_node_cpus(ray)
        if threads > largest:
            raise UsageError(f"the sweep's threads ({threads}) exceed the CPUs of every node of "
                             f"the Ray cluster (at most {largest:g} on one node): give --threads "
                             f"{max(1, int(largest))} or fewer, or start nodes with more CPUs")
        task = ray.remote(num_cpus=threads, max_retries=0)(measure_point)
        ref = ray.put(inputs)
        del inputs  # the object store holds them now
        cpus = float(ray.cluster_resources().get("CPU", threads))
        limit = self.workers or max(1, int(cpus // threads))
        pending = list(points)
        running: dict[Any, int] = {}
        done: dict[int, list[ConfigResult]] = {}
        nxt = 0
        submitted = 0
        while nxt < len(pending):
            while submitted < len(pending) and len(running) < limit:
                running[task.remote(pending[submitted], ref)] = submitted
                submitted += 1
            finished, _ = ray.wait(list(running), num_returns=1)
            for obj in finished:
                done[running.pop(obj)] = _result(ray, obj)
            while nxt in done:
                yield done.pop(nxt)
                nxt += 1


def _result(ray: Any, obj: Any) -> list[ConfigResult]:
    """A task's results; recallwatch's own errors raised in a task reach the user as they are
    (a wrong parameter, a store that refuses), not wrapped in Ray's report of the task."""
    try:
        out: list[ConfigResult] = ray.get(obj)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, RecallwatchError):
            raise cause from None
        raise
    return out
