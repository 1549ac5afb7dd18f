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
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

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

__all__ = ["MONITOR_KIND", "AlarmThresholds", "MonitorKeywords", "MonitorReport", "MonitorSettings",
           "ReindexSettings", "monitor_settings", "run_monitor"]

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


@dataclass(frozen=True)
class AlarmThresholds:
    """When a monitor run alarms (the run records them as ``thresholds``). ``floor``: recall@k
    against exact search under it; ``min_coverage``: the share of probes with a result at the
    calibrated no-result threshold under it; ``max_latency_p99_ms``: the probes' p99 search time
    surely over it; ``drift_alarm_p``: the data-drift test's p-value under it; ``min_freshness``:
    the probes' freshness under it. None switches a threshold off."""

    floor: float = 0.95
    min_coverage: float = 0.0
    max_latency_p99_ms: float | None = None
    drift_alarm_p: float | None = None
    min_freshness: float | None = None

    def check(self) -> None:
        """Every threshold in its range (the error names the parameter)."""
        shares = (("floor", self.floor, "a recall in [0, 1]"),
                  ("min_coverage", self.min_coverage, "a share in [0, 1]"),
                  ("min_freshness", self.min_freshness, "a share in [0, 1]"),
                  ("drift_alarm_p", self.drift_alarm_p, "a p-value threshold in [0, 1]"))
        for name, value, expected in shares:
            if value is not None and not 0.0 <= value <= 1.0:
                raise InputError(field=name, expected=expected, found=value)
        cap = self.max_latency_p99_ms
        if cap is not None and not (math.isfinite(cap) and cap > 0):
            raise InputError(field="max_latency_p99_ms", expected="a positive number of "
                             "milliseconds", found=cap)

    def to_dict(self) -> dict[str, float | None]:
        return {"floor": self.floor, "min_coverage": self.min_coverage,
                "max_latency_p99_ms": self.max_latency_p99_ms,
                "drift_alarm_p": self.drift_alarm_p, "min_freshness": self.min_freshness}


@dataclass(frozen=True)
class ReindexSettings:
    """The operation loop: recall@k under ``below`` triggers a verified background reindex (at
    most one per ``window``), switched in only when the new index reaches the floor and is not
    lower than the live one by more than ``max_recall_loss``. ``below`` None: no loop."""

    below: float | None = None
    window: timedelta = DEFAULT_WINDOW
    max_recall_loss: float | None = DEFAULT_MAX_RECALL_LOSS

    def check(self) -> None:
        if self.below is not None and not 0.0 <= self.below <= 1.0:
            raise InputError(field="reindex_below", expected="a recall in [0, 1]",
                             found=self.below)


@dataclass(frozen=True)
class MonitorSettings:
    """What a monitor run measures and holds it to: the depth ``k`` of recall@k, the alarm
    thresholds and the operation loop."""

    k: int = 10
    thresholds: AlarmThresholds = field(default_factory=AlarmThresholds)
    reindex: ReindexSettings = field(default_factory=ReindexSettings)

    def check(self, store: VectorStore) -> None:
        """Every threshold in its range, and a depth under the store's rows, before any
        search."""
        self.thresholds.check()
        self.reindex.check()
        k = self.k
        if k < 1:
            raise InputError(field="k", expected="a depth of at least 1", found=k)
        rows = store.count()
        if k >= rows:
            # exact search and the index then both return the whole store: recall is 1
            # whatever the index does, and the monitor could never alarm
            raise UsageError(f"--k {k:,} reaches every row of {store.uri} ({rows:,} rows): "
                             "recall@k against exact search would be 1 whatever the index "
                             "does, so the monitor could never alarm; use a depth well under "
                             "the row count (the default is 10)")


class MonitorKeywords(TypedDict, total=False):
    """:class:`MonitorSettings` as loose keywords of :func:`run_monitor` (its earlier form)."""

    k: int
    floor: float
    min_coverage: float
    max_latency_p99_ms: float | None
    drift_alarm_p: float | None
    min_freshness: float | None
    reindex_below: float | None
    reindex_window: timedelta
    max_recall_loss: float | None


def monitor_settings(settings: MonitorSettings | None = None,
                     **keywords: Unpack[MonitorKeywords]) -> MonitorSettings:
    """``settings`` (default: :class:`MonitorSettings`'s defaults) with each keyword given put
    in its group."""
    base = settings or MonitorSettings()
    kw: dict[str, Any] = dict(keywords)
    loop = {"below": "reindex_below", "window": "reindex_window",
            "max_recall_loss": "max_recall_loss"}
    out = MonitorSettings(
        k=kw.pop("k", base.k),
        thresholds=replace(base.thresholds, **{n: kw.pop(n) for n in list(kw)
                                                if n in AlarmThresholds.__dataclass_fields__}),
        reindex=replace(base.reindex, **{f: kw.pop(n) for f, n in loop.items() if n in kw}))
    if kw:  # as Python refuses an unknown keyword
        raise TypeError(f"run_monitor() got unexpected keyword argument(s): {', '.join(kw)}")
    return out


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


@dataclass
class _Findings:
    """What a run has found so far: its alarms and its notes, in the order they were raised."""

    alarms: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Recall:
    """Recall@k against exact search over the probes, and the live search's first timings."""

    recalls: np.ndarray
    seconds: np.ndarray
    mean: float
    interval: tuple[float, float]


@dataclass(frozen=True)
class _IndexState:
    """The live index: its build record (None without one or when it cannot answer), its age
    and the data drift since it was trained."""

    build: dict[str, Any] | None
    age_seconds: float | None
    drift: DriftSignal | None


def run_monitor(
    store: VectorStore, probes: ProbeSet, settings: MonitorSettings | None = None, *,
    budget: BudgetPolicy | None = None, history: History | None = None,
    now: datetime | None = None, live: LiveCheck | None = None,
    exact: ExactSearch | None = None, pipeline: PipelineProbes | None = None,
    clock: Callable[[], float] = time.perf_counter,
    **keywords: Unpack[MonitorKeywords],
) -> MonitorReport:
    """Measure the live index with the probes; record the run in ``history`` when given (the
    error budget is computed over the history's earlier monitor runs of this store).

    ``settings``: the depth k, the alarm thresholds and the operation loop
    (:class:`MonitorSettings`); each may also be given as a keyword (``k``, ``floor``,
    ``min_coverage``, ``max_latency_p99_ms``, ``drift_alarm_p``, ``min_freshness``,
    ``reindex_below``, ``reindex_window``, ``max_recall_loss``), which replaces the one in
    ``settings``. ``floor``: recall@k against exact search under it alarms. With
    ``reindex_below``, recall under it triggers a verified reindex (switched only when the new
    index reaches ``floor`` and is not lower than the live one by more than
    ``max_recall_loss``). ``drift_alarm_p``: alarm when the data-drift test's p-value is under
    it (None: never). ``max_latency_p99_ms``: alarm when the 99th percentile of the probes' live
    search time is surely over it, in milliseconds (None: never; the probes are then searched
    again in rounds for the calls a p99 needs: :mod:`recallwatch.ops.probe_latency`).
    ``min_freshness``: alarm when the probes' freshness is under it (None: never; without dated
    chunks it is not measured and never alarms).

    ``live``: the live signals of real traffic, already held to their thresholds
    (:func:`recallwatch.ops.live_signals.check_live`); its alarms are the monitor's. ``exact``:
    the exact search recall is measured against, in the reindex's verification too (default
    the store's own, ``search(exact=True)``; the Ray engine:
    :class:`recallwatch.scale.ray_exact_knn.RayExactSearch`). ``pipeline``: the same probes
    measured through a pipeline (:func:`recallwatch.ops.pipeline_probes.probe_pipeline`, held
    to its own thresholds); its alarms are the monitor's, and the latency cap is then the
    pipeline's (what users wait for), not the store's. ``clock``: the timer (tests inject a
    fake one)."""
    s = monitor_settings(settings, **keywords)
    s.check(store)
    now = now or datetime.now(UTC)
    vectors, fp = probe_vectors(probes, store)
    found = _Findings()
    problem = index_problem(store)
    if problem is not None:
        found.alarms.append(problem)
    recall = _recall(store, vectors, s, exact, clock, found)
    t = s.thresholds
    threshold, coverage = _coverage(store, vectors, fp, t.min_coverage, found.alarms,
                                    found.notes)
    index = _index_state(store, problem, now, t.drift_alarm_p, found)
    status = _budget(store, budget, history, now, recall.mean, live)
    _floor_alarm(recall, s, found)
    latency, ms = _latency(store, vectors, s.k, recall.seconds,
                           None if pipeline else t.max_latency_p99_ms, clock)
    if latency.alarm is not None:
        found.alarms.append(f"{latency.alarm}; look at the index parameters, the store's load "
                            "and its machine")
    if latency.note is not None:
        found.notes.append(latency.note)
    if pipeline is not None:
        found.alarms.extend(pipeline.alarms)
    freshness = _probe_freshness(store, probes, vectors, s.k, now.date(), t.min_freshness,
                                 found.alarms, found.notes)
    if live is not None:
        found.alarms.extend(live.alarms)
        found.notes.extend(live.notes)
    if status is not None and status.spent:
        found.alarms.append(status.summary())
    loop = _reindex_loop(store, probes, s, recall.mean, vectors, exact, history, now)
    held = _resources(store, int(vectors.shape[1]), found.notes)  # after the loop: what serves
    report = MonitorReport(
        store=store.uri, index_version=store.current_version(), probes=probes.describe(),
        k=s.k, floor=t.floor, recall=recall.mean, recall_min=float(recall.recalls.min()),
        probes_below_floor=int((recall.recalls < t.floor).sum()),
        latency_ms=latency_figures(ms), coverage=coverage, threshold=threshold,
        index=index.build, index_age_seconds=index.age_seconds, drift=index.drift,
        budget=status, alarms=tuple(found.alarms), created_at=now.isoformat(timespec="seconds"),
        notes=tuple(found.notes), reindex=loop, live=live, resources=held,
        thresholds=t.to_dict(), pipeline=pipeline, latency=latency.to_dict(),
        recall_ci=recall.interval, freshness=freshness,
    )
    return report if history is None else _recorded(report, history)


def _recall(store: VectorStore, vectors: np.ndarray, settings: MonitorSettings,
            exact: ExactSearch | None, clock: Callable[[], float], found: _Findings) -> _Recall:
    """Recall@k of the live search against exact search, probe by probe; a live search that
    fails is an alarm."""
    failures: list[str] = []
    recalls, seconds, _ = recall_vs_exact(store, vectors, settings.k, failures=failures,
                                          exact=exact, clock=clock)
    if failures:
        found.alarms.append(f"the live search fails ({len(failures)} of {len(vectors)} "
                            f"probes): {failures[0]}")
    return _Recall(recalls, seconds, float(recalls.mean()), _recall_interval(recalls))


def _floor_alarm(recall: _Recall, settings: MonitorSettings, found: _Findings) -> None:
    """An alarm when the mean recall is under the floor, with its interval over the probes."""
    floor, low, high = settings.thresholds.floor, *recall.interval
    if recall.mean < floor:
        found.alarms.append(
            f"recall@{settings.k} vs exact search is {recall.mean:.3f}, under the floor "
            f"{floor:g} (95 % interval {low:.3f}–{high:.3f} over {len(recall.recalls)} probes: "
            "what the probes say of all queries; the same probes on the same index measure "
            "the same recall)")


def _index_state(store: VectorStore, problem: str | None, now: datetime,
                 drift_alarm_p: float | None, found: _Findings) -> _IndexState:
    """The live index's build, age and data drift (no build read when the index has a
    problem)."""
    build = None if problem else index_build(store)
    age = None
    if build is not None and build.get("built_at"):
        age = max(0.0, (now - datetime.fromisoformat(build["built_at"])).total_seconds())
    drift = _drift(store, build, drift_alarm_p, found.alarms, found.notes)
    if build is None and problem is None:
        found.notes.append("index: the store reports no ANN index (searches are exact)")
    return _IndexState(build, age, drift)


def _reindex_loop(store: VectorStore, probes: ProbeSet, settings: MonitorSettings,
                  recall: float, vectors: np.ndarray, exact: ExactSearch | None,
                  history: History | None, now: datetime) -> dict[str, Any] | None:
    """What the operation loop did (None when it did not run: no ``reindex_below``, or recall
    at or above it)."""
    loop, k = settings.reindex, settings.k
    if loop.below is None or recall >= loop.below:
        return None
    done = auto_reindex(store, probes, trigger="monitor",
                        why=f"recall@{k} {recall:.3f} < {loop.below:g}", k=k,
                        floor=settings.thresholds.floor, window=loop.window, history=history,
                        now=now, max_recall_loss=loop.max_recall_loss, vectors=vectors,
                        exact=exact)
    return {**done.to_dict(), "summary": done.summary()}


def _recorded(report: MonitorReport, history: History) -> MonitorReport:
    """The report recorded in the history, with the id of its record."""
    rid = history.record_monitor_run(MONITOR_KIND, report.to_dict(), store_uri=report.store,
                                     index_version=report.index_version,
                                     status="alarm" if report.alarm else "ok",
                                     created_at=report.created_at)
    return replace(report, monitor_id=rid)
