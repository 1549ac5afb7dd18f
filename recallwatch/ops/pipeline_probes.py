"""The monitor's probes through a pipeline (``recallwatch ops monitor --pipeline FILE``): what
users of a pipeline wait for and get, measured with the probe set.

A pipeline (:mod:`recallwatch.retrievers.pipeline`: named retrievers, fusion, a reranker)
searches by text, so its probes are texts (golden-set or logged queries), searched one per call
as a user would. Measured:

* **latency** p50/p99/mean of the whole pipeline, per probe, in milliseconds; with
  ``max_latency_p99_ms`` the probes are searched again in rounds for the calls a p99 needs, and
  it alarms when the p99's whole 95 % interval is over the cap
  (:mod:`recallwatch.ops.probe_latency`);
* **answered**: the share of probes the pipeline answers with at least one result; it alarms
  under ``min_answered`` (the monitor's ``--min-coverage``). A pipeline's fused or reranked
  scores are not on the scale of the no-result threshold calibrated for an embedder, so no
  threshold is applied to them;
* **failures**: a probe whose search raised an error counts as unanswered and is an alarm.

What a pipeline cannot give: recall against exact search, index health and age, and data drift
compare the live index with the store's own vectors, so they need a store (``--store``); the
report says so when only a pipeline is given.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import InputError, RecallwatchError, UsageError
from recallwatch.ops.probe_latency import latency_figures, probe_latency_check, timed_rounds
from recallwatch.retrievers.http import redirect_notes

if TYPE_CHECKING:
    from recallwatch.history import History
    from recallwatch.ops.probes import ProbeSet
    from recallwatch.retrievers.pipeline import Pipeline

__all__ = ["NEEDS_A_STORE", "PipelineProbes", "probe_pipeline", "record_pipeline_probes"]

NEEDS_A_STORE = ("recall against exact search, index health, index age and data drift need a "
                 "store: they compare the live index with exact search on the store's own "
                 "vectors, which a pipeline does not expose; add --store URI (the store behind "
                 "the pipeline's dense retriever) to measure them")


@dataclass(frozen=True)
class PipelineProbes:
    pipeline: str  # the pipeline file, as given
    describe: dict[str, Any]  # Pipeline.describe(): retrievers, fusion, reranker
    k: int
    probes: int
    answered: float  # share of probes with at least one result
    latency_ms: dict[str, float]  # p50, p99, mean: the whole pipeline, one probe per call
    failures: int
    alarms: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    thresholds: dict[str, float | None] = field(default_factory=dict)
    # the latency's evidence: calls, p50/p99 with their intervals, the cap's verdict
    latency: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "describe": self.describe, "k": self.k,
                "probes": self.probes, "answered": self.answered,
                "latency_ms": self.latency_ms, "failures": self.failures,
                "alarms": list(self.alarms), "notes": list(self.notes),
                "thresholds": self.thresholds, "latency": self.latency}


def probe_pipeline(pipeline: Pipeline, probes: ProbeSet, *, name: str, k: int = 10,
                   min_answered: float = 0.0, max_latency_p99_ms: float | None = None,
                   clock: Callable[[], float] = time.perf_counter) -> PipelineProbes:
    """Search each probe text through ``pipeline`` (top ``k``), one per call, timed by
    ``clock`` (tests inject a fake one), after one untimed search of the first probe; with a
    latency cap, again in rounds for the calls a p99 needs."""
    if probes.vectors is not None:
        raise UsageError(f"a pipeline searches by text, and the probe set {probes.name!r} holds "
                         "vectors (.npy); build one from texts: recallwatch ops probes OUT "
                         "--golden GOLDEN (or --queries LOGGED)")
    if not probes.texts:
        raise InputError(field="probes", expected="at least one probe text", found=0)
    if k < 1:
        raise InputError(field="k", expected="a depth of at least 1", found=k)
    texts = list(probes.texts)
    # untimed: the first search may load a model, open a connection or import an engine (a
    # failure is the timed call's to report)
    with contextlib.suppress(RecallwatchError):
        pipeline.search(texts[:1], k)
    seconds, answered, errors = [], [], []
    for text in texts:
        start = clock()
        try:
            hits = pipeline.search([text], k).final[0]
        except RecallwatchError as exc:
            hits = []
            errors.append(str(exc))
        seconds.append(clock() - start)
        answered.append(len(hits) > 0)
    if max_latency_p99_ms is not None:
        def search_one(i: int) -> object:
            try:
                return pipeline.search([texts[i]], k)
            except RecallwatchError:  # already counted in the first pass
                return None

        seconds = timed_rounds(search_one, len(texts), seconds, clock=clock)
    ms = np.asarray(seconds, dtype=np.float64) * 1e3
    check = probe_latency_check(ms, max_latency_p99_ms, probes=len(texts),
                                what="pipeline latency",
                                how="one search each through every retriever, the fusion and "
                                "the reranker")
    share = float(np.mean(answered))
    alarms = []
    if errors:
        alarms.append(f"the pipeline's search fails ({len(errors)} of {len(probes)} probes): "
                      f"{errors[0]}")
    if share < min_answered:
        alarms.append(f"the pipeline answers {share:.1%} of the probes (at least one result), "
                      f"under the minimum {min_answered:.0%}: look at each retriever's results "
                      "for the unanswered probes")
    if check.alarm is not None:
        alarms.append(check.alarm)
    return PipelineProbes(
        pipeline=name, describe=pipeline.describe(), k=k, probes=len(probes), answered=share,
        latency_ms=latency_figures(ms), failures=len(errors), alarms=tuple(alarms),
        notes=("answered: a pipeline's fused or reranked scores are not on the scale of a "
               "no-result threshold, so a probe counts as answered with any result",
               *redirect_notes(pipeline.retrievers.values()),
               *(() if check.note is None else (check.note,))),
        thresholds={"min_coverage": min_answered, "max_latency_p99_ms": max_latency_p99_ms},
        latency=check.to_dict())


def record_pipeline_probes(measured: PipelineProbes, probes: ProbeSet,
                           history: History | None, *, kind: str,
                           now: datetime | None = None) -> dict[str, Any]:
    """The monitor record of a pipeline measured alone (no store): the probes' figures, the
    alarms, and the note that the store's measures need a store; written to ``history`` (as a
    record of ``kind``, named ``pipeline:FILE`` where a store's URI would be) when given."""
    at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    record: dict[str, Any] = {
        "store": None, "retriever": f"pipeline:{measured.pipeline}", "probes": probes.describe(),
        "k": measured.k, "latency_ms": measured.latency_ms, "coverage": None,
        "pipeline": measured.to_dict(), "alarm": bool(measured.alarms),
        "alarms": list(measured.alarms), "notes": [NEEDS_A_STORE, *measured.notes],
        "thresholds": measured.thresholds, "created_at": at, "monitor_id": None,
    }
    if history is not None:
        record["monitor_id"] = history.record_monitor_run(
            kind, record, store_uri=record["retriever"], index_version=None,
            status="alarm" if measured.alarms else "ok", created_at=at)
    return record
