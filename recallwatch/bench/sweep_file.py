"""The sweep file (YAML, see ``docs/bench.md``), read and checked whole before anything native
runs: engine names, every build and query parameter against the engine's declared ranges, the
dataset, timing and load settings, each error located. Running it is :mod:`recallwatch.bench.sweep`.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch._redact import redact_all
from recallwatch.bench.datasets import check_spec
from recallwatch.bench.engines import ENGINES, Engine
from recallwatch.bench.engines.base import param_problem
from recallwatch.bench.measure import DEFAULT_ROUNDS, MAX_LOAD_SECONDS, MAX_LOAD_THREADS, MAX_ROUNDS
from recallwatch.errors import InputError
from recallwatch.formats.fields import bounded, check_keys, line_of, shown, text_id
from recallwatch.formats.structured import LINE_KEY, load_structured

__all__ = ["MAX_CONFIGS", "MAX_K", "MAX_THREADS", "EngineSpec", "SweepConfig", "load_sweep"]

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
    rounds: int = DEFAULT_ROUNDS  # of the single-query timing, interleaved across settings
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
    for name, section, keys in (("timing", timing, {"warmup", "single_queries", "batch_repeats",
                                                          "rounds"}),
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
        rounds=bounded(timing.get("rounds", DEFAULT_ROUNDS), 1, MAX_ROUNDS, source=src,
                       line=timing_line, field="timing.rounds"),
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
