"""``recallwatch ops monitor --pipeline FILE``: the probes searched through a pipeline, with or
without a store beside it (:mod:`recallwatch.ops.pipeline_probes`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.ops.pipeline_probes import PipelineProbes
    from recallwatch.ops.probes import ProbeSet


def check_pipeline_only(*, reindex_below: float | None, engine: str, log: Path | None) -> None:
    """Refuse what only a store can do, when no --store is given."""
    if reindex_below is not None:
        raise UsageError("--reindex-below rebuilds a store's index: give the store with --store "
                         "(a pipeline alone has no index to rebuild)")
    if engine != "local":
        raise UsageError("--engine ray computes exact search over a store's vectors: give the "
                         "store with --store")
    if log is not None:
        raise UsageError("--log is read beside a store's monitor run: give the store with "
                         "--store")


@contextmanager
def probed(path: Path | None, probes: ProbeSet, *, k: int, min_coverage: float,
           max_latency_p99_ms: float | None) -> Iterator[PipelineProbes | None]:
    """The probes measured through the pipeline file at ``path`` (None without one); its
    retrievers are closed before the store's measures run."""
    if path is None:
        yield None
        return
    from recallwatch.ops.pipeline_probes import probe_pipeline
    from recallwatch.retrievers.pipeline import Pipeline, load_pipeline

    spec = load_pipeline(path)
    with Pipeline.from_spec(spec, base_dir=path.resolve().parent) as opened:
        measured = probe_pipeline(opened, probes, name=str(path), k=k,
                                  min_answered=min_coverage,
                                  max_latency_p99_ms=max_latency_p99_ms)
    yield measured


def latency_text(ms: dict[str, float], evidence: dict[str, Any] | None) -> str:
    """``p50 4.06 ms [3.91–4.20], p99 9.81 ms [7.02–14.6] over 368 calls``: the figures of a
    monitor's ``latency_ms`` with the intervals and calls of its ``latency``; from too few calls
    for its interval, the p99 is not stated, and the line says why (the JSON's ``latency_ms``
    keeps the plain figure)."""
    if evidence is None:  # a record written before the evidence was kept
        return f"p50 {ms['p50']:.2f} ms, p99 {ms['p99']:.2f} ms"

    def ci(name: str) -> str:
        interval = evidence.get(f"{name}_ci_ms")
        return "" if not interval else f" [{interval[0]:.2f}–{interval[1]:.2f}]"

    p99 = f"p99 {ms['p99']:.2f} ms{ci('p99')}"
    if evidence.get("p99_missing"):  # the slowest call or two of too few: not a p99
        p99 = f"p99 not stated ({evidence['p99_missing']})"
    return f"p50 {ms['p50']:.2f} ms{ci('p50')}, {p99} over {evidence['calls']} calls"


def pipeline_lines(p: dict[str, Any]) -> list[str]:
    """The pipeline's part of the monitor's text report (``PipelineProbes.to_dict()``)."""
    lat, cap = p["latency_ms"], p["thresholds"].get("max_latency_p99_ms")
    names = ", ".join(p["describe"].get("retrievers", {}))
    least = p["thresholds"].get("min_coverage")
    return [f"  pipeline           {p['pipeline']} (retrievers: {names}; top {p['k']})",
            f"    latency          {latency_text(lat, p.get('latency'))} (the whole "
            "pipeline, one probe per call; "
            + ("no maximum set)" if cap is None else f"p99 max {cap:g} ms)"),
            f"    answered         {p['answered']:.1%} of {p['probes']} probes with at least "
            "one result" + ("" if not least else f" (min {least:.0%})")
            + (f"; {p['failures']} failed" if p["failures"] else "")]


def pipeline_only_text(record: dict[str, Any]) -> str:
    """The text report of a pipeline measured without a store."""
    p = record["probes"]
    lines = [f"monitor {record['retriever']} — probes {p['name']} v{p['version']} "
             f"({p['size']} {p['kind']}, #{p['hash'][:12]})",
             *pipeline_lines(record["pipeline"])]
    lines.extend(f"  note: {n}" for n in record["notes"])
    lines.extend(f"ALARM: {a}" for a in record["alarms"])
    if not record["alarms"]:
        lines.append("OK")
    return "\n".join(lines)
