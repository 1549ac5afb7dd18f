"""A sweep: one dataset, exact truth, every engine configuration (build × query parameters) timed
on one machine. Read from YAML; see ``docs/bench.md`` for the format.

Per configuration: recall@1/10/100 by id and tie-aware; QPS one query at a time on one thread and
batched on ``threads``; latency mean/p50/p95/p99 from the single-query timings; CPU-seconds per
1,000 queries; build time; index bytes as the library reports or serialises them, and the RSS
delta around the build, each labelled; bytes per vector; for store engines, a concurrent load
test per thread count.
"""

from __future__ import annotations

import gc
import itertools
import math
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._hashing import canonical_hash
from recallwatch._redact import redact_all
from recallwatch.bench.datasets import Dataset, check_spec, dataset_from_spec
from recallwatch.bench.engines import ENGINES, Engine, Space, make_engine
from recallwatch.bench.engines.base import param_problem
from recallwatch.bench.measure import (
    MAX_LOAD_SECONDS,
    MAX_LOAD_THREADS,
    Latency,
    LoadPoint,
    latency_of,
    load_test,
    rss_bytes,
    time_batch,
    time_single,
)
from recallwatch.bench.truth import (
    ground_truth,
    id_recall,
    prepare,
    tie_aware_recall,
)
from recallwatch.errors import InputError
from recallwatch.formats.fields import bounded, check_keys, line_of, shown, text_id
from recallwatch.formats.structured import LINE_KEY, load_structured

__all__ = [
    "ConfigResult",
    "EngineSpec",
    "SweepConfig",
    "SweepResult",
    "cpu_model",
    "load_sweep",
    "machine_info",
    "run_sweep",
]

SCHEMA_VERSION = 1
_TOP_KEYS = {"name", "dataset", "k", "recall_at", "threads", "timing", "load", "targets",
             "cache", "engines", "out"}
_ENGINE_KEYS = {"engine", "label", "build", "query"}


@dataclass(frozen=True)
class EngineSpec:
    engine: str
    builds: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    label: str


@dataclass(frozen=True)
class SweepConfig:
    name: str
    dataset: dict[str, Any]
    engines: list[EngineSpec]
    k: int = 10
    recall_at: list[int] = field(default_factory=lambda: [1, 10, 100])
    threads: int = 1
    warmup: int = 10
    single_queries: int | None = None  # None: every query
    batch_repeats: int = 1
    load_threads: list[int] = field(default_factory=lambda: [1, 2, 4])
    load_seconds: float = 2.0
    targets: list[float] = field(default_factory=lambda: [0.9, 0.95, 0.99])
    cache: str | None = None
    out: str | None = None
    source: str = ""
    base_dir: str = "."
    raw: dict[str, Any] = field(default_factory=dict)  # the file's content, hashed with results


# Beyond these a sweep would run for days or exhaust memory before measuring anything.
MAX_K = 10_000
MAX_CONFIGS = 10_000
MAX_THREADS = 1024


def _grid(spec: Any, source: str, where: str, line: int | None) -> list[dict[str, Any]]:
    """``{a: [1, 2], b: 3}`` → every combination: [{a: 1, b: 3}, {a: 2, b: 3}]."""
    if spec is None:
        return [{}]
    if not isinstance(spec, Mapping):
        raise InputError(source=source, line=line, field=where,
                         expected="a mapping of parameter: value or [values]", found=shown(spec))
    keys = [k for k in spec if k != LINE_KEY]
    values = [v if isinstance(v, list) else [v] for v in (spec[k] for k in keys)]
    for key, vals in zip(keys, values, strict=True):
        if not vals:
            raise InputError(source=source, line=line_of(spec), field=f"{where}.{key}",
                             expected="at least one value", found=[])
    if math.prod(len(v) for v in values) > MAX_CONFIGS:
        raise InputError(source=source, line=line_of(spec), field=where,
                         expected=f"at most {MAX_CONFIGS:,} combinations",
                         found=math.prod(len(v) for v in values))
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def _check_params(engine: type[Engine], stage: str, spec: Any, grid: list[dict[str, Any]],
                  source: str, line: int | None, where: str) -> None:
    """Every value of a build or query grid, against the engine's declared names and ranges:
    before anything native runs."""
    declared = engine.build_params if stage == "build" else engine.query_params
    open_param = engine.open_query_param if stage == "query" else None
    if isinstance(spec, dict) and open_param is None:
        check_keys(spec, {p.name for p in declared}, source=source, record=f"{where}.{stage}")
    for combo in grid:
        bad = param_problem(declared, combo, open_param=open_param)
        if bad is not None:
            name, expected, found = bad
            raise InputError(source=source, line=line_of(spec) or line, record=where,
                             field=f"{stage}.{name}", expected=expected, found=shown(found))


def _text(value: Any, source: str, line: int | None, name: str) -> str:
    text = text_id(value)
    if text is None:
        raise InputError(source=source, line=line, field=name, expected="a non-empty string",
                         found=shown(value))
    return text


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != LINE_KEY}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def load_sweep(path: str | os.PathLike[str]) -> SweepConfig:
    """Read and check a sweep YAML file: engine names, every parameter's type and range, the
    dataset, timing and load settings. Nothing native runs before this has passed."""
    p = Path(path)
    src = str(p)
    data = load_structured(p)
    if not isinstance(data, dict):
        raise InputError(source=src, expected="a mapping at the top level",
                         found=type(data).__name__)
    check_keys(data, _TOP_KEYS, source=src)
    line = line_of(data)
    if "dataset" not in data:
        raise InputError(source=src, line=line, field="dataset", expected="a mapping",
                         found="<missing>")
    check_spec(data["dataset"], source=src, line=line)
    engines_raw = data.get("engines")
    if not isinstance(engines_raw, list) or not engines_raw:
        raise InputError(source=src, line=line, field="engines",
                         expected="a non-empty list of engine entries", found=shown(engines_raw))
    engines: list[EngineSpec] = []
    for i, entry in enumerate(engines_raw):
        where = f"engines[{i}]"
        if not isinstance(entry, dict) or "engine" not in entry:
            raise InputError(source=src, line=line_of(entry) or line, field=where,
                             expected="a mapping with 'engine'", found=shown(entry))
        check_keys(entry, _ENGINE_KEYS, source=src, record=where)
        name = entry["engine"]
        if not isinstance(name, str) or name not in ENGINES:
            raise InputError(source=src, line=line_of(entry), record=where, field="engine",
                             expected=f"one of {', '.join(ENGINES.names())}", found=shown(name))
        builds = _grid(entry.get("build"), src, f"{where}.build", line_of(entry))
        queries = _grid(entry.get("query"), src, f"{where}.query", line_of(entry))
        engine = ENGINES.get(name)
        _check_params(engine, "build", entry.get("build"), builds, src, line_of(entry), where)
        _check_params(engine, "query", entry.get("query"), queries, src, line_of(entry), where)
        label = _text(entry.get("label", name), src, line_of(entry), f"{where}.label")
        engines.append(EngineSpec(name, builds, queries, label))
    k = bounded(data.get("k", 10), 1, MAX_K, source=src, line=line, field="k")
    recall_at = data.get("recall_at", [1, 10, 100])
    if not isinstance(recall_at, list) or not recall_at:
        raise InputError(source=src, line=line, field="recall_at",
                         expected="a list of depths", found=shown(recall_at))
    depths = sorted({bounded(v, 1, MAX_K, source=src, line=line, field="recall_at")
                     for v in recall_at} | {k})
    # `timing:` alone means the defaults; an empty list is not a mapping
    timing = {} if data.get("timing") is None else data["timing"]
    load = {} if data.get("load") is None else data["load"]
    for name, section, keys in (("timing", timing, {"warmup", "single_queries", "batch_repeats"}),
                                ("load", load, {"threads", "seconds"})):
        if not isinstance(section, dict):
            raise InputError(source=src, line=line, field=name, expected="a mapping",
                             found=shown(section))
        check_keys(section, keys, source=src, record=name)
    timing_line, load_line = line_of(timing) or line, line_of(load) or line
    load_threads = load.get("threads", [1, 2, 4])
    load_threads = load_threads if isinstance(load_threads, list) else [load_threads]
    seconds = bounded(load.get("seconds", 2.0), 0.1, MAX_LOAD_SECONDS, source=src,
                      line=load_line, field="load.seconds", integer=False)
    targets = data.get("targets", [0.9, 0.95, 0.99])
    targets = targets if isinstance(targets, list) else [targets]
    for t in targets:
        if not isinstance(t, int | float) or isinstance(t, bool) or not 0 < t <= 1:
            raise InputError(source=src, line=line, field="targets",
                             expected="recall targets in (0, 1]", found=shown(t))
    single = timing.get("single_queries")
    return SweepConfig(
        name=_text(data.get("name", p.stem), src, line, "name"),
        dataset=data["dataset"],
        engines=engines,
        k=k,
        recall_at=depths,
        threads=bounded(data.get("threads", 1), 1, MAX_THREADS, source=src, line=line,
                        field="threads"),
        warmup=bounded(timing.get("warmup", 10), 0, 100_000, source=src, line=timing_line,
                       field="timing.warmup"),
        single_queries=None if single is None else bounded(
            single, 1, 10_000_000, source=src, line=timing_line, field="timing.single_queries"),
        batch_repeats=bounded(timing.get("batch_repeats", 1), 1, 1000, source=src,
                              line=timing_line, field="timing.batch_repeats"),
        load_threads=[bounded(t, 1, MAX_LOAD_THREADS, source=src, line=load_line,
                              field="load.threads") for t in load_threads],
        load_seconds=float(seconds),
        targets=[float(t) for t in targets],
        cache=None if data.get("cache") is None else _text(data["cache"], src, line, "cache"),
        out=None if data.get("out") is None else _text(data["out"], src, line, "out"),
        source=src,
        base_dir=str(p.parent),
        raw=redact_all(_strip(data)),  # recorded with the results: no store password
    )


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
    qps_single: float
    qps_batch: float
    latency: Latency  # from single-query timings, one thread
    cpu_s_per_1000_single: float
    cpu_s_per_1000_batch: float
    build_seconds: float
    index_bytes: int | None
    index_bytes_how: str | None
    rss_delta_bytes: int | None  # RSS after build minus before (approximate: allocator reuse)
    bytes_per_vector: float | None
    load: list[LoadPoint] = field(default_factory=list)

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
    return {"single": 1, "batched_and_build": threads, "faiss_omp_max": faiss.omp_get_max_threads(),
            "env": env}


def run_sweep(
    config: SweepConfig,
    *,
    dataset: Dataset | None = None,
    on_result: Callable[[ConfigResult], None] | None = None,
) -> SweepResult:
    """Run every configuration of ``config`` (on ``dataset`` if given, else its own)."""
    from datetime import UTC, datetime

    started = datetime.now(UTC).isoformat(timespec="seconds")
    data = dataset or dataset_from_spec(config.dataset, source=config.source,
                                        base_dir=Path(config.base_dir))
    n = data.base.shape[0]
    depths = [d for d in config.recall_at if d <= n]
    if config.k > n:
        raise InputError(source=config.source, field="k", expected=f"k ≤ {n} (the base size)",
                         found=config.k)
    cache = None if config.cache is None else Path(config.base_dir) / config.cache
    t0 = time.perf_counter()
    truth = ground_truth(data.base, data.queries, max(depths), data.metric, cache_dir=cache)
    truth_seconds = time.perf_counter() - t0
    xb, xq = prepare(data.base, data.metric), prepare(data.queries, data.metric)
    space: Space = "l2" if data.metric == "l2" else "ip"
    single_q = xq if config.single_queries is None else xq[:config.single_queries]
    results: list[ConfigResult] = []
    for spec in config.engines:
        for build in spec.builds:
            engine = make_engine(spec.engine, **build)
            engine.set_threads(config.threads)
            gc.collect()
            rss0 = rss_bytes()
            b0 = time.perf_counter()
            engine.build(xb, space, data.ids)
            build_seconds = time.perf_counter() - b0
            rss1 = rss_bytes()
            memory = engine.memory()
            try:
                for query in spec.queries:
                    applied = engine.set_query_params(query)
                    result = _measure(engine, spec, build, applied, config, xb, xq, single_q,
                                      truth, depths, build_seconds, memory,
                                      None if rss0 is None or rss1 is None else rss1 - rss0)
                    results.append(result)
                    if on_result is not None:
                        on_result(result)
            finally:
                engine.close()
    finished = datetime.now(UTC).isoformat(timespec="seconds")
    dataset_info = {"name": data.name, "n": n, "d": int(data.base.shape[1]),
                    "queries": int(data.queries.shape[0]), "metric": data.metric,
                    "hash": data.hash, "source": data.source}
    return SweepResult(config.name, dataset_info, config.k, thread_settings(config.threads),
                       machine_info(), config.raw,
                       canonical_hash(config.raw),
                       truth_seconds, results, config.targets, started, finished)


def _measure(engine: Any, spec: EngineSpec, build: dict[str, Any], query: dict[str, Any],
             config: SweepConfig, xb: np.ndarray, xq: np.ndarray, single_q: np.ndarray,
             truth: Any, depths: Sequence[int], build_seconds: float, memory: Any,
             rss_delta: int | None) -> ConfigResult:
    k = config.k
    engine.set_threads(1)
    single, per_query = time_single(engine, single_q, k, warmup=config.warmup)
    engine.set_threads(config.threads)
    batch, found = time_batch(engine, xq, k, repeats=config.batch_repeats)
    recall: dict[int, float] = {}
    ties: dict[int, float] = {}
    for depth in depths:
        answer = found if depth == k else engine.search(xq, depth)
        recall[depth] = float(id_recall(answer, truth.ids, depth).mean())
        ties[depth] = float(tie_aware_recall(answer, truth, xb, xq, depth).mean())
    load: list[LoadPoint] = []
    if engine.is_store:
        load = [load_test(engine, xq, k, threads=t, seconds=config.load_seconds)
                for t in config.load_threads]
    index_bytes = None if memory is None else memory.bytes
    return ConfigResult(
        engine=spec.engine, label=spec.label, build=dict(build), query=dict(query), k=k,
        recall=recall, recall_ties=ties, qps_single=single.qps, qps_batch=batch.qps,
        latency=latency_of(per_query), cpu_s_per_1000_single=single.cpu_seconds_per_1000,
        cpu_s_per_1000_batch=batch.cpu_seconds_per_1000, build_seconds=build_seconds,
        index_bytes=index_bytes, index_bytes_how=None if memory is None else memory.how,
        rss_delta_bytes=rss_delta,
        bytes_per_vector=None if index_bytes is None else index_bytes / xb.shape[0], load=load)
