"""The production monitor: is the live index still finding what exact search finds?

One :func:`run_monitor` call measures, for a probe set on a store:

* **recall@k vs exact**: the live (ANN) top-k of each probe against the exact top-k of the same
  store (``search(exact=True)``), as :func:`recallwatch.bench.exact_knn.id_recall` counts it;
* **latency** p50/p99 of the live search, one probe per call (what a user waits for);
* **coverage**: the share of probes with at least one result scoring at or above the no-result
  threshold calibrated for the store's embedder (``recallwatch ops calibrate-threshold``), if any;
* **index health**: the live index must exist where one was built, and answer: a vector index
  LanceDB no longer lists (it ignores entries it cannot read, and every search silently becomes a
  flat scan), or a live search that fails, is an alarm (:mod:`recallwatch.ops.index_health`);
* **index age**: time since the live index was trained (folding rows in with ``optimize`` does not
  make it younger);
* **data drift**: rows written since the index was trained against the rows it was trained on
  (:mod:`recallwatch.ops.drift`);
* **live signals** from real traffic, when given: no-result rate, click-through rate,
  abandonment and latency percentiles over a window of an interaction log, each against an
  alarm threshold (:mod:`recallwatch.ops.live_signals`);
* **freshness**: for a store whose chunks carry dates, the share of probes whose top k ranks
  the newest valid version of each document it reaches above that document's older versions,
  and how old the top-k results are (:mod:`recallwatch.acceptance.freshness`; the probes have no
  expected chunks, so the documents checked are those their top k reaches); it alarms under
  ``min_freshness``;
* **resources**: the store's row count, the bytes of its stored vectors (rows × dimensions × 4:
  every adapter stores float32 components) and, where the store can say (``SupportsIndexSize``),
  the bytes of its ANN index, measured by the engine;
* **error budget** over this and earlier monitor runs (:mod:`recallwatch.ops.budget`); a run
  whose live traffic crossed a threshold counts as bad;
* with ``reindex_below``, the **operation loop**: recall under that level triggers a verified
  background reindex (:mod:`recallwatch.ops.autoreindex`, at most one per window), switched in
  only when the new index reaches the floor and is not worse than the live one beyond the
  tolerance; the report says what it did.

Recall is measured by :mod:`recallwatch.ops.recall`. It alarms when the index is missing or
cannot answer, recall < floor, coverage < ``min_coverage``, the probes' p99 latency is over
``max_latency_p99_ms``, freshness is under ``min_freshness``, a live signal crosses its
threshold, or the error budget is spent. None of these needs an interaction log: the probes are
the monitor's own searches. The thresholds applied are recorded with the run (``thresholds``),
so the dashboard draws them. The CLI turns an alarm into exit code 1 and an optional webhook
POST (:mod:`recallwatch.ops.webhook`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.acceptance.freshness import top_k_freshness
from recallwatch.bench.plan import vector_bytes
from recallwatch.errors import InputError, StoreError, UsageError
from recallwatch.ops.autoreindex import DEFAULT_WINDOW, auto_reindex
from recallwatch.ops.budget import BudgetPolicy, BudgetStatus, error_budget
from recallwatch.ops.drift import DriftSignal, drift_signal
from recallwatch.ops.drift_stats import out_of_reach, permutations_for
from recallwatch.ops.index_health import index_build, index_problem
from recallwatch.ops.live_signals import LiveCheck, live_breached
from recallwatch.ops.pipeline_probes import PipelineProbes
from recallwatch.ops.probe_latency import (
    LatencyCheck,
    latency_figures,
    probe_latency_check,
    timed_rounds,
)
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.recall import ExactSearch, probe_vectors, recall_vs_exact
from recallwatch.ops.reindex import DEFAULT_MAX_RECALL_LOSS
from recallwatch.stores.base import SupportsIndexSize

if TYPE_CHECKING:
    from recallwatch.embedders.base import Fingerprint
    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore

__all__ = ["MONITOR_KIND", "MonitorReport", "run_monitor"]

MONITOR_KIND = "monitor"


# -- the monitor run -------------------------------------------------------------------------
@dataclass(frozen=True)
class MonitorReport:
    store: str
    index_version: str
    probes: dict[str, Any]
    k: int
    floor: float
    recall: float
    recall_min: float
    probes_below_floor: int
    latency_ms: dict[str, float]  # p50, p99, mean
    coverage: float | None
    threshold: float | None
    index: dict[str, Any] | None
    index_age_seconds: float | None
    drift: DriftSignal | None
    budget: BudgetStatus | None
    alarms: tuple[str, ...]
    created_at: str
    monitor_id: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    reindex: dict[str, Any] | None = None  # what --reindex-below did (AutoReindex.to_dict())
    live: LiveCheck | None = None
    resources: dict[str, Any] | None = None  # rows, dimensions, vector_bytes, index_bytes
    # the alarm thresholds applied: floor, min_coverage, max_latency_p99_ms, drift_alarm_p
    thresholds: dict[str, float | None] = field(default_factory=dict)
    pipeline: PipelineProbes | None = None  # the probes through a pipeline (--pipeline)
    # the latency's evidence: calls, p50/p99 with their 95 % intervals, the cap's verdict
    # (LatencyCheck.to_dict())
    latency: dict[str, Any] | None = None
    recall_ci: tuple[float, float] | None = None  # 95 % bootstrap interval of the mean recall
    # the probes' freshness (recallwatch.acceptance.freshness, documents their top k reaches)
    freshness: dict[str, Any] | None = None

    @property
    def alarm(self) -> bool:
        return bool(self.alarms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.store, "index_version": self.index_version, "probes": self.probes,
            "k": self.k, "floor": self.floor, "recall": self.recall,
            "recall_min": self.recall_min, "probes_below_floor": self.probes_below_floor,
            "latency_ms": self.latency_ms, "coverage": self.coverage,
            "threshold": self.threshold, "index": self.index,
            "index_age_seconds": self.index_age_seconds,
            "drift": None if self.drift is None else self.drift.to_dict(),
            "budget": None if self.budget is None else self.budget.to_dict(),
            "alarm": self.alarm, "alarms": list(self.alarms), "created_at": self.created_at,
            "monitor_id": self.monitor_id, "notes": list(self.notes), "reindex": self.reindex,
            "live": None if self.live is None else self.live.to_dict(),
            "resources": self.resources, "thresholds": self.thresholds,
            "pipeline": None if self.pipeline is None else self.pipeline.to_dict(),
            "latency": self.latency,
            "recall_ci": None if self.recall_ci is None else list(self.recall_ci),
            "freshness": self.freshness,
        }


def _resources(store: VectorStore, dimensions: int, notes: list[str]) -> dict[str, Any]:
    """What the store holds: rows, the bytes of their float32 vectors, and the ANN index's
    bytes where the store measures them (None where it cannot say; 0 without an index)."""
    rows = store.count()
    index_bytes = None
    if isinstance(store, SupportsIndexSize):
        try:
            index_bytes = int(store.index_bytes())
        except StoreError as exc:
            notes.append(f"resources: index size unreadable: {exc}")
    else:
        notes.append("resources: the store does not report its index size")
    return {"rows": rows, "dimensions": dimensions,
            "vector_bytes": vector_bytes(rows, dimensions, "f32"),
            "index_bytes": index_bytes}


def _freshness(store: VectorStore, probes: ProbeSet, vectors: np.ndarray, k: int,
               as_of: date, min_freshness: float | None) -> tuple[dict[str, Any], str | None]:
    """The probes' freshness on the live index, and its alarm (None: none)."""
    tops = [h.ids for h in store.search(vectors, k)]
    names = [f"probe {i + 1}" + (f" {probes.texts[i][:60]!r}" if i < len(probes.texts) else "")
             for i in range(len(tops))]
    chunks = store.get(list(dict.fromkeys(cid for top in tops for cid in top)))
    figures = top_k_freshness(list(zip(names, tops, strict=True)), chunks,
                              lambda docs: store.chunks(doc_ids=list(docs)), as_of, k)
    share = figures.get("share")
    if min_freshness is None or share is None or share + 1e-12 >= min_freshness:
        return figures, None
    named = "; ".join(f"{s['query']}: {s['why']}" for s in figures["stale"][:3])
    return figures, (f"freshness {share:.3f} is under the minimum {min_freshness:g}: "
                     f"{figures['queries'] - figures['fresh']} of {figures['queries']} probes "
                     f"reaching a document with dated versions rank an older version above the "
                     f"newest valid one (as of {figures['as_of']}), e.g. {named}; re-ingest or "
                     "expire the old versions (valid_to), or filter them out of the search")


def _probe_freshness(store: VectorStore, probes: ProbeSet, vectors: np.ndarray, k: int,
                     as_of: date, min_freshness: float | None, alarms: list[str],
                     notes: list[str]) -> dict[str, Any] | None:
    """The probes' freshness, and its alarm; None (with a note) when the live search fails."""
    try:
        figures, stale = _freshness(store, probes, vectors, k, as_of, min_freshness)
    except StoreError as exc:  # a live search that fails is already an alarm
        notes.append(f"freshness: not measured: {exc}")
        return None
    if stale is not None:
        alarms.append(stale)
    return figures


def _check_settings(store: VectorStore, *, k: int, floor: float, min_coverage: float,
                    min_freshness: float | None, reindex_below: float | None,
                    drift_alarm_p: float | None, max_latency_p99_ms: float | None) -> None:
    """Every threshold in its range, and a depth under the store's rows, before any search."""
    if not 0.0 <= floor <= 1.0:
        raise InputError(field="floor", expected="a recall in [0, 1]", found=floor)
    if not 0.0 <= min_coverage <= 1.0:
        raise InputError(field="min_coverage", expected="a share in [0, 1]", found=min_coverage)
    if min_freshness is not None and not 0.0 <= min_freshness <= 1.0:
        raise InputError(field="min_freshness", expected="a share in [0, 1]",
                         found=min_freshness)
    if reindex_below is not None and not 0.0 <= reindex_below <= 1.0:
        raise InputError(field="reindex_below", expected="a recall in [0, 1]",
                         found=reindex_below)
    if drift_alarm_p is not None and not 0.0 <= drift_alarm_p <= 1.0:
        raise InputError(field="drift_alarm_p", expected="a p-value threshold in [0, 1]",
                         found=drift_alarm_p)
    if max_latency_p99_ms is not None and not (math.isfinite(max_latency_p99_ms)
                                               and max_latency_p99_ms > 0):
        raise InputError(field="max_latency_p99_ms", expected="a positive number of "
                         "milliseconds", found=max_latency_p99_ms)
    if k < 1:
        raise InputError(field="k", expected="a depth of at least 1", found=k)
    rows = store.count()
    if k >= rows:
        # exact search and the index then both return the whole store: recall is 1 whatever
        # the index does, and the monitor could never alarm
        raise UsageError(f"--k {k:,} reaches every row of {store.uri} ({rows:,} rows): recall@k "
                         "against exact search would be 1 whatever the index does, so the "
                         "monitor could never alarm; use a depth well under the row count "
                         "(the default is 10)")


def _coverage(store: VectorStore, vectors: np.ndarray, fp: Fingerprint | None,
              min_coverage: float, alarms: list[str],
              notes: list[str]) -> tuple[float | None, float | None]:
    """(threshold, coverage): the share of probes whose best result reaches the no-result
    threshold calibrated for the store's embedder (both None without one)."""
    from recallwatch.ops.calibrate import read_threshold

    threshold = read_threshold(store, fp) if fp is not None else None
    if threshold is None:
        notes.append("coverage: no no-result threshold calibrated for this embedder "
                     "(recallwatch ops calibrate-threshold)")
        return None, None
    top = store.search(vectors, 1)
    coverage = float(np.mean([len(h.ids) > 0 and float(h.scores[0]) >= threshold for h in top]))
    if coverage < min_coverage:
        alarms.append(f"coverage {coverage:.1%} is under the minimum {min_coverage:.0%}: the "
                      f"no-result threshold {threshold:.4f} leaves most probes without an "
                      "answer (calibrate it again: recallwatch calibrate-threshold)")
    return threshold, coverage


def _drift(store: VectorStore, build: dict[str, Any] | None, drift_alarm_p: float | None,
           alarms: list[str], notes: list[str]) -> DriftSignal | None:
    """The rows written since the index was trained against the trained ones; an alarm when
    the two-sample test's p-value is under ``drift_alarm_p`` (the test then shuffles the rows
    often enough for its p-value to reach well under the threshold)."""
    if build is None or build.get("trained_version") is None:
        return None
    permutations = permutations_for(drift_alarm_p)
    try:
        drift = drift_signal(store, str(build["trained_version"]), permutations=permutations)
    except StoreError as exc:
        notes.append(f"drift: {exc}")
        return None
    if drift is None or drift.test is None or drift_alarm_p is None:
        return drift
    t = drift.test
    unreachable = out_of_reach(drift_alarm_p, t.permutations)
    if unreachable is not None:
        notes.append(f"drift: {unreachable}")
    if t.p_value < drift_alarm_p:
        alarms.append(f"data drift: the rows written since version {drift.trained_version} "
                      f"differ from the trained rows (two-sample test p-value "
                      f"{t.p_value:.4f} < {drift_alarm_p:g}: MMD² {t.mmd2:.4g}, "
                      f"{t.permutations:,} permutations, {t.reference_rows:,} trained and "
                      f"{t.current_rows:,} new rows; a false alarm at most {drift_alarm_p:.1%} "
                      "of the time when nothing drifted); rebuild the index on the current data "
                      "(recallwatch ops reindex)")
    return drift


def _budget(store: VectorStore, budget: BudgetPolicy | None, history: History | None,
            now: datetime, recall: float, live: LiveCheck | None) -> BudgetStatus | None:
    """The error budget over this run and the history's earlier monitor runs of the store."""
    if budget is None:
        return None
    past: list[tuple[datetime, float, bool]] = []
    if history is not None:
        for run in history.monitor_runs(kind=MONITOR_KIND):
            if run.store_uri == store.uri and isinstance(run.payload.get("recall"), float):
                past.append((datetime.fromisoformat(run.created_at), run.payload["recall"],
                             live_breached(run.payload)))
    return error_budget([*past, (now, recall, bool(live and live.alarms))], budget, now=now)


def _recall_interval(recalls: np.ndarray) -> tuple[float, float]:
    """The 95 % bootstrap interval of the mean recall over the probes (seeded)."""
    from recallwatch.stats import bootstrap_ci

    ci = bootstrap_ci(np.zeros_like(recalls), recalls)
    return float(ci.low), float(ci.high)


def _latency(store: VectorStore, vectors: np.ndarray, k: int, seconds: np.ndarray,
             cap: float | None, clock: Callable[[], float]) -> tuple[LatencyCheck, np.ndarray]:
    """The probes' live search times (ms) and the cap's verdict; with a cap, the probes are
    searched again in rounds for the calls a p99 needs."""
    timed: list[float] = seconds.tolist()
    if cap is not None:
        def search_one(i: int) -> object:
            try:
                return store.search(vectors[i:i + 1], k)
            except StoreError:  # already an alarm from the first pass
                return None

        timed = timed_rounds(search_one, len(vectors), timed, clock=clock)
    ms = np.asarray(timed, dtype=np.float64) * 1e3
    return probe_latency_check(ms, cap, probes=len(vectors), what="probe latency",
                               how="one live search each"), ms


def run_monitor(
    store: VectorStore, probes: ProbeSet, *, k: int = 10, floor: float = 0.95,
    budget: BudgetPolicy | None = None, history: History | None = None,
    now: datetime | None = None, live: LiveCheck | None = None,
    reindex_below: float | None = None, reindex_window: timedelta = DEFAULT_WINDOW,
    exact: ExactSearch | None = None, min_coverage: float = 0.0,
    drift_alarm_p: float | None = None, max_latency_p99_ms: float | None = None,
    pipeline: PipelineProbes | None = None,
    max_recall_loss: float | None = DEFAULT_MAX_RECALL_LOSS,
    clock: Callable[[], float] = time.perf_counter,
    min_freshness: float | None = None,
) -> MonitorReport:
    """Measure the live index with the probes; record the run in ``history`` when given (the
    error budget is computed over the history's earlier monitor runs of this store). ``live``:
    the live signals of real traffic, already held to their thresholds
    (:func:`recallwatch.ops.live_signals.check_live`); its alarms are the monitor's. With
    ``reindex_below``, recall under it triggers a verified reindex (switched only when the new
    index reaches ``floor`` and is not lower than the live one by more than
    ``max_recall_loss``). ``exact``: the exact search recall is measured against, in the
    reindex's verification too (default the store's own, ``search(exact=True)``; the Ray engine:
    :class:`recallwatch.scale.ray_exact_knn.RayExactSearch`). ``drift_alarm_p``: alarm when the
    data-drift test's p-value is under it (None: never). ``max_latency_p99_ms``: alarm when the
    99th percentile of the probes' live search time is surely over it, in milliseconds (None:
    never; the probes are then searched again in rounds for the calls a p99 needs:
    :mod:`recallwatch.ops.probe_latency`). ``pipeline``: the same probes measured through a
    pipeline (:func:`recallwatch.ops.pipeline_probes.probe_pipeline`, held to its own
    thresholds); its alarms are the monitor's, and the latency cap is then the pipeline's (what
    users wait for), not the store's. ``clock``: the timer (tests inject a fake one).
    ``min_freshness``: alarm when the probes' freshness is under it (None: never; without dated
    chunks it is not measured and never alarms)."""
    _check_settings(store, k=k, floor=floor, min_coverage=min_coverage,
                    min_freshness=min_freshness, reindex_below=reindex_below,
                    drift_alarm_p=drift_alarm_p, max_latency_p99_ms=max_latency_p99_ms)
    now = now or datetime.now(UTC)
    vectors, fp = probe_vectors(probes, store)
    alarms: list[str] = []
    notes: list[str] = []
    problem = index_problem(store)
    if problem is not None:
        alarms.append(problem)
    failures: list[str] = []
    recalls, seconds, _ = recall_vs_exact(store, vectors, k, failures=failures, exact=exact,
                                          clock=clock)
    if failures:
        alarms.append(f"the live search fails ({len(failures)} of {len(vectors)} probes): "
                      f"{failures[0]}")
    recall = float(recalls.mean())
    threshold, coverage = _coverage(store, vectors, fp, min_coverage, alarms, notes)
    build = None if problem else index_build(store)
    age = None
    if build is not None and build.get("built_at"):
        age = max(0.0, (now - datetime.fromisoformat(build["built_at"])).total_seconds())
    drift = _drift(store, build, drift_alarm_p, alarms, notes)
    if build is None and problem is None:
        notes.append("index: the store reports no ANN index (searches are exact)")
    status = _budget(store, budget, history, now, recall, live)
    recall_ci = _recall_interval(recalls)
    if recall < floor:
        alarms.append(f"recall@{k} vs exact search is {recall:.3f}, under the floor {floor:g} "
                      f"(95 % interval {recall_ci[0]:.3f}–{recall_ci[1]:.3f} over "
                      f"{len(recalls)} probes: what the probes say of all queries; the same "
                      "probes on the same index measure the same recall)")
    latency, ms = _latency(store, vectors, k, seconds,
                           None if pipeline else max_latency_p99_ms, clock)
    if latency.alarm is not None:
        alarms.append(f"{latency.alarm}; look at the index parameters, the store's load and its "
                      "machine")
    if latency.note is not None:
        notes.append(latency.note)
    if pipeline is not None:
        alarms.extend(pipeline.alarms)
    freshness = _probe_freshness(store, probes, vectors, k, now.date(), min_freshness, alarms,
                                 notes)
    if live is not None:
        alarms.extend(live.alarms)
        notes.extend(live.notes)
    if status is not None and status.spent:
        alarms.append(status.summary())
    loop = None
    if reindex_below is not None and recall < reindex_below:
        done = auto_reindex(store, probes, trigger="monitor",
                            why=f"recall@{k} {recall:.3f} < {reindex_below:g}", k=k, floor=floor,
                            window=reindex_window, history=history, now=now,
                            max_recall_loss=max_recall_loss,
                            vectors=vectors, exact=exact)
        loop = {**done.to_dict(), "summary": done.summary()}
    held = _resources(store, int(vectors.shape[1]), notes)  # after the loop: what serves now
    record_time = now.isoformat(timespec="seconds")
    report = MonitorReport(
        store=store.uri, index_version=store.current_version(), probes=probes.describe(), k=k,
        floor=floor, recall=recall, recall_min=float(recalls.min()),
        probes_below_floor=int((recalls < floor).sum()),
        latency_ms=latency_figures(ms),
        coverage=coverage, threshold=threshold, index=build, index_age_seconds=age, drift=drift,
        budget=status, alarms=tuple(alarms), created_at=record_time, notes=tuple(notes),
        reindex=loop, live=live,
        resources=held,
        thresholds={"floor": floor, "min_coverage": min_coverage,
                    "max_latency_p99_ms": max_latency_p99_ms, "drift_alarm_p": drift_alarm_p,
                    "min_freshness": min_freshness},
        pipeline=pipeline, latency=latency.to_dict(), recall_ci=recall_ci, freshness=freshness,
    )
    if history is not None:
        rid = history.record_monitor_run(MONITOR_KIND, report.to_dict(), store_uri=store.uri,
                                         index_version=report.index_version,
                                         status="alarm" if report.alarm else "ok",
                                         created_at=record_time)
        report = replace(report, monitor_id=rid)
    return report
