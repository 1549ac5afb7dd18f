"""The heavy steps on Ray, giving the same bytes as the single-process paths.

* **Corpus embedding** (:class:`RayEmbedding`): Ray Data ``map_batches`` over actors that each
  load the embedder once (a GPU each when the cluster has GPUs). The embedder's output for a text
  depends on the other texts in its batch (padding), so the driver cuts the batches exactly as the
  single-process ingestion does and each batch is embedded whole by one actor. The vectors stream
  back in order and the driver writes them through :func:`recallwatch.ops.ingest.ingest`, so
  idempotence, resumption and the report are those of the ordinary path. The batches are taken
  as the ingestion reads its corpus, a window of texts at a time, never the whole corpus.
* **Exact ground truth** (:func:`ground_truth`): the base is cut into shards of ``shard_rows``
  rows; one Ray task per shard searches every query block against it (faiss, one thread per task)
  and the driver merges the shards' top-k. Ties are ordered by id in both paths, so the merge is
  exact. A task holds one shard, the queries and its top-k: memory per worker is bounded by the
  shard size, not by the base.
* **Gate and eval retrieval** (:class:`RaySource`): the golden queries are split across actors
  that each open the store and the embedder; the parts are cut at the embedder's batch boundaries
  so every query is embedded in the same batch as in one process.
"""

from __future__ import annotations

import inspect
import itertools
import json
import logging
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from recallwatch.acceptance.model import RunConfig
from recallwatch.acceptance.retrieve import Retrieved, StoreSource, Timings, latency_rows
from recallwatch.bench.exact_knn import (
    GroundTruth,
    check_inputs,
    exact_scores,
    merge_topk,
    prepare,
    scores_to_distances,
)
from recallwatch.errors import NotInstalledError, UsageError
from recallwatch.formats.ann import Metric
from recallwatch.formats.golden import GoldenQuery
from recallwatch.formats.policy import SearchSettings
from recallwatch.scale._address import check_reachable
from recallwatch.stores.base import Chunk

__all__ = ["RayEmbedding", "RaySource", "ground_truth", "merged_shards", "ray_session",
           "require_ray", "shard_topk"]

DEFAULT_SHARD_ROWS = 1 << 18  # 262,144 rows: 768 MiB of 768-d float32 per task
_MAX_BLOCKS = 10_000  # Ray Data blocks of pre-cut batches (several batches a block past this)
WINDOW_TEXTS = 1 << 17  # texts an ingestion sends to Ray per run (131,072: ~130 MB at 1 KB each)


def require_ray() -> ModuleType:
    """The ``ray`` module, or NotInstalledError naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise NotInstalledError("ray (the Ray engine)", "ray") from exc
    return ray


@contextmanager
def ray_session(address: str | None = None, workers: int | None = None) -> Iterator[ModuleType]:
    """Ray, connected: to the running session if there is one, else to the cluster at
    ``address``, else to a local Ray started here with ``workers`` CPUs (stopped on exit)."""
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, found {workers}")
    ray = require_ray()
    if address is not None:
        check_reachable(address)
    if ray.is_initialized():
        yield ray
        return
    # Ray's note that a local cluster uses token authentication is about Ray's defaults, not
    # this run: a user sees recallwatch's own progress only
    token_log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = token_log.level
    token_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            # lance warns at every fork; Ray's forks exec a new program at once, so nothing of
            # lance is used in them
            warnings.filterwarnings("ignore", message="lance is not fork-safe")
            warnings.filterwarnings("ignore", message="lancedb fork support is experimental")
            ray.init(address=address, num_cpus=None if address else workers,
                     include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    except ConnectionError as exc:  # a wrong --address is the user's to fix, not a crash
        raise UsageError(f"cannot reach the Ray cluster at {address}: {exc} (check --address: "
                         "HOST:PORT of the head node, or auto)") from None
    finally:
        token_log.setLevel(level)
    try:
        yield ray
    finally:
        ray.shutdown()


def _quiet_data(ray: ModuleType) -> None:
    with warnings.catch_warnings():
        # Ray Data's own context warns about its own deprecated defaults: nothing a user can fix
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"ray\.")
        ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.execution_options.preserve_order = True  # vectors come back in corpus order
    ctx.execution_options.verbose_progress = False
    # Ray Data's notes on the terminal (its progress bars are off, an execution finished): a user
    # sees recallwatch's progress only; Ray Data's own log file keeps them
    for handler in logging.getLogger("ray.data").handlers:
        if not isinstance(handler, logging.FileHandler) and "File" not in type(handler).__name__:
            handler.setLevel(logging.ERROR)


def _concurrency(ray: ModuleType, workers: int | None) -> int:
    if workers is not None:
        return workers
    return max(1, int(ray.available_resources().get("CPU", 1)))


def _worker_overrides(spec: str) -> dict[str, Any]:
    """One BLAS thread per worker when the embedder takes a thread count: Ray gives each actor
    one CPU, and more threads than that only contend. Threads do not change the vectors."""
    from recallwatch.embedders import EMBEDDERS, split_spec

    name, options = split_spec(spec)
    factory = EMBEDDERS.get(name)
    params = inspect.signature(factory).parameters  # type: ignore[arg-type]
    return {"threads": 1} if "threads" in params and "threads" not in options else {}


class _EmbedBatches:
    """A Ray Data actor: loads the embedder once, embeds whole pre-cut batches."""

    def __init__(self, spec: str, overrides: dict[str, Any]) -> None:
        from recallwatch.embedders import embedder_from_spec

        self.embedder = embedder_from_spec(spec, **overrides)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        numbers, rows, vectors = [], [], []
        for number, payload in zip(batch["batch"], batch["texts"]):
            texts = json.loads(str(payload))
            vectors.append(np.asarray(self.embedder.embed_documents(texts), dtype=np.float32))
            numbers.append(np.full(len(texts), int(number), dtype=np.int64))
            rows.append(np.arange(len(texts), dtype=np.int64))
        return {"batch": np.concatenate(numbers), "row": np.concatenate(rows),
                "vector": np.concatenate(vectors)}


@dataclass
class RayEmbedding:
    """``embed_batches`` for :func:`recallwatch.ops.ingest.ingest`: the batches the ingestion cut,
    embedded on Ray actors built from ``spec``, yielded in order, one array per batch.

    The batches are read lazily, a window of about ``window`` texts at a time, each window one
    Ray Data run (its actors load the model once per window): the driver holds a window's texts
    and vectors, not the corpus's. A window ends at a batch boundary, so every batch is embedded
    whole, as in one process.
    """

    spec: str
    workers: int | None = None
    window: int = WINDOW_TEXTS

    def __call__(self, batches: Iterable[list[str]]) -> Iterator[np.ndarray]:
        pending = iter(batches)
        while window := _window(pending, self.window):
            yield from self._embed(window)

    def _embed(self, batches: list[list[str]]) -> Iterator[np.ndarray]:
        ray = require_ray()
        _quiet_data(ray)
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        items = [{"batch": i, "texts": json.dumps(b, ensure_ascii=False)}
                 for i, b in enumerate(batches)]
        # One block per batch (up to _MAX_BLOCKS): Ray hands out work by blocks, so fewer blocks
        # than actors would leave actors idle.
        blocks = min(len(items), _MAX_BLOCKS)
        actors = min(_concurrency(ray, self.workers), len(items))
        with warnings.catch_warnings():
            # max_restarts is still how Ray Data turns actor restarts off (it calls its keyword
            # arguments deprecated). Without restarts a failed batch fails the ingestion, which
            # resumes where it stopped; with them Ray prints an error line on every run.
            warnings.filterwarnings("ignore", message=".*ray_remote_args. is deprecated")
            ds = ray.data.from_items(items, override_num_blocks=blocks).map_batches(
                _EmbedBatches, batch_size=1, batch_format="numpy",
                fn_constructor_kwargs={"spec": self.spec,
                                       "overrides": _worker_overrides(self.spec)},
                compute=ray.data.ActorPoolStrategy(size=actors), num_cpus=1, num_gpus=gpus,
                max_restarts=0)
        # Reassembled by (batch, row), so the order holds even if Ray splits or reorders blocks.
        pending: dict[int, np.ndarray] = {}
        filled: dict[int, int] = {}
        nxt = 0
        for out in ds.iter_batches(batch_size=None, batch_format="numpy"):
            for number, row, vec in zip(out["batch"], out["row"], out["vector"]):
                b = int(number)
                if b not in pending:
                    pending[b] = np.empty((len(batches[b]), len(vec)), dtype=np.float32)
                    filled[b] = 0
                pending[b][int(row)] = vec
                filled[b] += 1
            while nxt in pending and filled[nxt] == len(batches[nxt]):
                yield pending.pop(nxt)
                del filled[nxt]
                nxt += 1
        if nxt != len(batches):
            raise RuntimeError(f"Ray returned {nxt} of {len(batches)} embedded batches")


def _window(batches: Iterator[list[str]], texts: int) -> list[list[str]]:
    """The next batches, up to the first that brings the window to ``texts`` texts."""
    out: list[list[str]] = []
    count = 0
    for batch in batches:
        out.append(batch)
        count += len(batch)
        if count >= texts:
            break
    return out


def shard_topk(shard: np.ndarray, offset: int, queries: np.ndarray, k: int, metric: Metric,
               block: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-min(k, rows) of every query against one prepared shard, ids made global."""
    depth = min(k, shard.shape[0])
    scores = np.empty((queries.shape[0], depth), dtype=np.float32)
    ids = np.empty((queries.shape[0], depth), dtype=np.int64)
    for start in range(0, queries.shape[0], block):  # the single-process path's query blocks
        s, i = exact_scores(shard, queries[start:start + block], depth, metric)
        scores[start:start + len(s)] = s
        ids[start:start + len(s)] = np.where(i >= 0, i + offset, -1)
    return scores, ids


def ground_truth(
    base: np.ndarray,
    queries: np.ndarray,
    k: int,
    metric: Metric = "ip",
    *,
    block: int = 4096,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    workers: int | None = None,
) -> GroundTruth:
    """Exact top-k as :func:`recallwatch.bench.exact_knn.ground_truth` computes it (same ids, same
    distances, byte for byte), with the base searched in shards on Ray tasks.

    ``base`` may be a memory-mapped ``.npy``: the driver reads one shard at a time and at most
    ``workers`` shards are in flight, so neither the driver nor a worker holds the whole base.
    """
    check_inputs(base, queries, k)
    ray = require_ray()
    task = ray.remote(num_cpus=1)(shard_topk)
    q_ref = ray.put(np.ascontiguousarray(queries, dtype=np.float32))
    return merged_shards(
        lambda start, stop: task.remote(prepare(np.asarray(base[start:stop]), metric), start,
                                        q_ref, k, metric, block),
        base.shape[0], k, metric, shard_rows=shard_rows, workers=workers)


def merged_shards(submit: Callable[[int, int], Any], rows: int, k: int, metric: Metric, *,
                  shard_rows: int, workers: int | None) -> GroundTruth:
    """The exact top-k over ``rows`` base rows: ``submit(start, stop)`` starts the Ray task
    that searches rows [start, stop) (:func:`shard_topk`); at most ``workers`` run at once, and
    their answers are merged as they finish."""
    if shard_rows < 1:
        raise UsageError(f"shard_rows must be at least 1, found {shard_rows}")
    ray = require_ray()
    limit = _concurrency(ray, workers)
    best: tuple[np.ndarray, np.ndarray] | None = None
    running: list[Any] = []

    def absorb(done: list[Any]) -> None:
        nonlocal best
        for part in ray.get(done):
            # merging is exact in any order: (score, id) is a total order
            best = part if best is None else merge_topk([best, part], k, metric)

    for start in range(0, rows, shard_rows):
        if len(running) >= limit:
            done, running = ray.wait(running, num_returns=1)
            absorb(done)
        running.append(submit(start, start + shard_rows))
    absorb(running)
    assert best is not None  # check_inputs refused an empty base
    scores, ids = merge_topk([best], k, metric)
    return GroundTruth(ids, scores_to_distances(scores, metric).astype(np.float32), metric, k, "")


class _Retriever:
    """A Ray actor: the store and its embedder opened once, retrieving a share of the queries."""

    def __init__(self, store: str, spec: str | None, settings: SearchSettings) -> None:
        from recallwatch.embedders import embedder_for_store
        from recallwatch.stores import open_store

        self.store = open_store(store)
        self.source = StoreSource(self.store, embedder_for_store(self.store, spec), settings)

    def retrieve(self, queries: list[GoldenQuery], depth: int, sample: int | None
                 ) -> tuple[list[Retrieved], float, float, list[float], int]:
        """This share's results, its embedding and search seconds, each query's own search
        seconds (``sample`` of them; None: automatic) and how many queries it embedded (what
        the run's cost is computed from)."""
        self.source.timings = Timings()
        self.source.latency_sample = sample
        out = self.source.retrieve(queries, depth)
        t = self.source.timings
        return out, t.embed, t.search, list(t.search_each), t.embedded


@dataclass
class RaySource:
    """A gate source whose retrieval runs on Ray actors; everything else is ``local``'s.

    ``store`` is the store URI as given (with any credential: the actors open it themselves) and
    ``spec`` the ``--embedder`` given, if any (the actors choose the embedder as the driver did).
    The configuration recorded with the run is the local source's, so the run hash is the same
    whichever engine retrieved.
    """

    local: StoreSource
    store: str
    spec: str | None = None
    workers: int | None = None
    _actors: list[Any] = field(default_factory=list, init=False)

    @property
    def timings(self) -> Timings:
        return self.local.timings

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]:
        ray = require_ray()
        expected = list(dict.fromkeys(c for q in queries for c in q.expected))
        self.local.check_exists(queries, expected)  # a dataset error is raised here, not in Ray
        parts = _split(list(queries), _concurrency(ray, self.workers),
                       getattr(self.local.embedder, "batch_size", None))
        if len(self._actors) < len(parts):  # started once, reused by later calls
            actor = ray.remote(num_cpus=1)(_Retriever)
            self._actors += [actor.remote(self.store, self.spec, self.local.settings)
                             for _ in range(len(parts) - len(self._actors))]
        samples = _share_samples([len(p) for p in parts], self.local.latency_sample)
        self.local.timings.sample = ("auto" if self.local.latency_sample is None
                                     else self.local.latency_sample)
        t0 = time.perf_counter()
        answers = ray.get([a.retrieve.remote(p, depth, n)
                           for a, p, n in zip(self._actors, parts, samples)])
        wall = time.perf_counter() - t0
        embed = sum(a[1] for a in answers)
        search = sum(a[2] for a in answers)
        # wall-clock time, shared between embedding and search as the workers spent it
        share = embed / (embed + search) if embed + search > 0 else 0.0
        self.local.timings.embed += wall * share
        self.local.timings.search += wall * (1 - share)
        for a in answers:  # each query's own search call, as a worker timed it
            self.local.timings.search_each.extend(a[3])
            self.local.timings.embedded += a[4]
        return [r for a in answers for r in a[0]]

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        return self.local.chunks(ids)

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        return self.local.siblings(doc_ids)

    def describe(self) -> dict[str, Any]:
        return self.local.describe()

    def config(self) -> RunConfig:
        return self.local.config()

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        return self.local.embed(texts)

    def index_bytes(self) -> int | None:
        return self.local.index_bytes()


def _share_samples(sizes: list[int], sample: int | None) -> list[int | None]:
    """Each share's latency sample: automatic in each, or the run's ``sample`` queries, as
    spread over the whole set, counted in each share."""
    if sample is None:
        return [None] * len(sizes)
    rows = np.asarray(latency_rows(sum(sizes), sample), dtype=np.int64)
    bounds = np.cumsum([0, *sizes]).tolist()
    return [int(np.count_nonzero((rows >= lo) & (rows < hi)))
            for lo, hi in itertools.pairwise(bounds)]


def _split(queries: list[GoldenQuery], parts: int, batch: int | None) -> list[list[GoldenQuery]]:
    """At most ``parts`` contiguous shares, cut only at multiples of the embedder's batch size
    (an embedder without one is given all queries in one share: its batching is unknown)."""
    if not isinstance(batch, int) or batch < 1:
        return [queries]
    batches = -(-len(queries) // batch) or 1
    per = -(-batches // min(parts, batches)) * batch
    return [queries[i:i + per] for i in range(0, len(queries), per)] or [queries]
