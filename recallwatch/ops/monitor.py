"""The production monitor: is the live index still finding what exact search finds?

One :func:`run_monitor` call measures, for a probe set on a store:

* **recall@k vs exact**: the live (ANN) top-k of each probe against the exact top-k of the same
  store (``search(exact=True)``), as :func:`recallwatch.bench.truth.id_recall` counts it;
* **latency** p50/p99 of the live search, one probe per call (what a user waits for);
* **coverage**: the share of probes with at least one result scoring at or above the no-result
  threshold calibrated for the store's embedder (``recallwatch calibrate-threshold``), if any;
* **index health**: the live index must exist where one was built, and answer: a vector index
  LanceDB no longer lists (it ignores entries it cannot read, and every search silently becomes a
  flat scan), or a live search that fails, is an alarm;
* **index age**: time since the live index was trained (folding rows in with ``optimize`` does not
  make it younger);
* **data drift**: rows written since the index was trained against the rows it was trained on —
  the cosine distance between their mean embeddings, and the share of new vectors farther from
  every IVF centroid than 95 % of the trained rows are (the baseline share is 5 % by
  construction). Centroids are the engine's own when it exposes them (LanceDB does); otherwise
  faiss k-means centroids of the trained rows;
* **error budget** over this and earlier monitor runs (:mod:`recallwatch.ops.budget`).

It alarms when the index is missing or cannot answer, recall < floor, or the error budget is
spent. The CLI turns an alarm into exit code 1
and an optional webhook POST.
"""

from __future__ import annotations

import json
import math
import time
import urllib.request
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import InputError, NotInstalledError, StoreError, UsageError
from recallwatch.ops.budget import BudgetPolicy, BudgetStatus, error_budget
from recallwatch.ops.probes import ProbeSet
from recallwatch.stores._common import engine_message

if TYPE_CHECKING:
    from recallwatch.embedders.base import Fingerprint
    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore

__all__ = [
    "INDEX_BUILDS_META_KEY",
    "MONITOR_KIND",
    "DriftSignal",
    "MonitorReport",
    "drift_signal",
    "index_build",
    "index_problem",
    "post_webhook",
    "probe_vectors",
    "recall_vs_exact",
    "record_index_build",
    "run_monitor",
]

MONITOR_KIND = "monitor"
INDEX_BUILDS_META_KEY = "index_builds"  # [{at, built_at, version, trained_version, uuids, kind}]
_KEEP_BUILDS = 50
_DRIFT_SAMPLE = 5000
_FAR_QUANTILE = 0.95


# -- probe vectors and recall ----------------------------------------------------------------
def probe_vectors(probes: ProbeSet, store: VectorStore) -> tuple[np.ndarray, Fingerprint | None]:
    """The probes as query vectors, and the fingerprint of the embedder behind them.

    Text probes are embedded with the embedder that built the index (its spec and fingerprint
    are in the store's metadata, written at ingestion); vector probes are taken as they are, with
    the store's fingerprint."""
    from recallwatch.embedders.base import (
        FINGERPRINT_META_KEY,
        SPEC_META_KEY,
        Fingerprint,
        check_fingerprint,
        fingerprint_of,
    )

    stored = store.get_meta(FINGERPRINT_META_KEY)
    built_with = Fingerprint.from_dict(stored) if isinstance(stored, dict) else None
    if probes.vectors is not None:
        return probes.vectors, built_with
    spec = store.get_meta(SPEC_META_KEY)
    if not isinstance(spec, str):
        raise UsageError(f"{store.uri} does not record the embedder that built it (no "
                         f"{SPEC_META_KEY!r} in its metadata): give the probes as a .npy file of "
                         "query vectors instead of texts")
    from recallwatch.embedders import embedder_from_spec

    embedder = embedder_from_spec(spec)
    fp = fingerprint_of(embedder)
    check_fingerprint(built_with, fp, index=store.uri)
    vectors = np.asarray(embedder.embed_queries(list(probes.texts)), dtype=np.float32)
    return vectors, fp


def recall_vs_exact(
    store: VectorStore, vectors: np.ndarray, k: int, *, exact_store: VectorStore | None = None,
    failures: list[str] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Per probe: recall@k of ``store``'s live search against exact search (on ``exact_store``,
    default the same store), the live latency in seconds, and the live result counts. With a
    ``failures`` list, a live search that fails (StoreError) counts as finding nothing and its
    message is added there; without, it is raised."""
    from recallwatch.bench.truth import id_recall

    if k < 1:
        raise InputError(field="k", expected="a positive integer", found=k)
    live, seconds = [], np.empty(len(vectors), dtype=np.float64)
    for i, row in enumerate(vectors):
        t0 = time.perf_counter()
        try:
            live.append(store.search(row[None, :], k)[0].ids)
        except StoreError as exc:
            if failures is None:
                raise
            failures.append(str(exc))
            live.append([])
        seconds[i] = time.perf_counter() - t0
    exact = [h.ids for h in (exact_store or store).search(vectors, k, exact=True)]
    vocab: dict[str, int] = {}
    # no wider than the longest answer: k may exceed the rows there are (the stores clamp it)
    width = max(1, max((len(ids) for ids in (*live, *exact)), default=0))

    def encode(rows: list[list[str]]) -> np.ndarray:
        out = np.full((len(rows), width), -1, dtype=np.int64)
        for r, ids in enumerate(rows):
            for c, cid in enumerate(ids[:width]):
                out[r, c] = vocab.setdefault(cid, len(vocab))
        return out

    recalls = id_recall(encode(live), encode(exact), k)
    return recalls, seconds, [len(ids) for ids in live]


# -- index builds ----------------------------------------------------------------------------
def record_index_build(store: VectorStore, record: dict[str, Any]) -> None:
    builds = store.get_meta(INDEX_BUILDS_META_KEY) or []
    store.set_meta(INDEX_BUILDS_META_KEY, [*builds, record][-_KEEP_BUILDS:])


def index_build(store: VectorStore) -> dict[str, Any] | None:
    """When the live index was trained and on which version: the last build this package
    recorded if it still names the live index, else what the engine reports. None when the store
    has no index (LanceDB: none that LanceDB lists)."""
    from recallwatch.ops._lance_index import LanceIndex, is_lance

    lance_view = is_lance(store) and not getattr(store, "read_only", False)
    state = LanceIndex(store).state() if lance_view else None  # type: ignore[arg-type]
    if lance_view and state is None:
        return None
    builds = store.get_meta(INDEX_BUILDS_META_KEY) or []
    last = builds[-1] if builds else None
    if last is not None and (state is None or set(last.get("uuids", [])) == set(state.uuids)):
        return dict(last)
    if state is None:
        return None
    trained_at = None if state.trained_at is None else state.trained_at.isoformat()
    if trained_at is None:  # the training commit was cleaned up: a build recorded for it
        trained_at = next((b.get("built_at") for b in reversed(builds)
                           if b.get("trained_version") == state.trained_version), None)
    return {"built_at": trained_at, "trained_version": state.trained_version,
            "uuids": list(state.uuids), "kind": "engine", "indexed_rows": state.indexed_rows,
            "unindexed_rows": state.unindexed_rows}


def index_problem(store: VectorStore) -> str | None:
    """Why the store's ANN index cannot serve although one was built, or None. LanceDB skips an
    index entry it cannot read (logging "Index … has version 1, which is not supported") and
    then searches every row: the result is still right, so recall alone never shows it."""
    from recallwatch.ops._lance_index import LanceIndex, is_lance

    if not is_lance(store) or getattr(store, "read_only", False):
        return None
    lx = LanceIndex(store)  # type: ignore[arg-type]
    try:
        if lx.state() is not None:
            return None
    except StoreError as exc:  # listed, but its files cannot be read
        cause = exc.__cause__ or exc
        return (f"the vector index cannot be read: its files are damaged or missing "
                f"({engine_message(cause)})")
    ignored = lx.ignored()
    if ignored:
        return (f"the vector index {ignored[0].name!r} is unusable: LanceDB does not list it "
                "(it cannot read its entry), so every search scans all rows; `recallwatch "
                "reindex` builds a new one")
    builds = store.get_meta(INDEX_BUILDS_META_KEY) or []
    if builds and builds[-1].get("uuids"):
        last = builds[-1]
        return (f"the vector index is missing: LanceDB lists none, but the last {last['kind']} "
                f"({last.get('at')}) left one; every search scans all rows")
    return None


# -- data drift ------------------------------------------------------------------------------
@dataclass(frozen=True)
class DriftSignal:
    trained_version: str
    new_rows: int
    trained_rows: int
    mean_cosine_distance: float  # 1 - cos(mean of new vectors, mean of trained vectors)
    share_far: float  # new vectors beyond the trained rows' 95th-percentile centroid distance
    baseline_share_far: float  # the same share among the trained rows (≈ 0.05)
    centroids: str  # "engine (N)" or "faiss k-means (N)"
    sampled: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stored_vectors(store: VectorStore, ids: list[str]) -> np.ndarray | None:
    from recallwatch.ops._lance_index import LanceIndex, is_lance

    if is_lance(store):
        return LanceIndex(store).vectors(ids)  # type: ignore[arg-type]
    direct = getattr(store, "vectors", None)
    return np.asarray(direct(ids), dtype=np.float32) if callable(direct) else None


def _unit(x: np.ndarray) -> np.ndarray:
    from recallwatch.bench.truth import normalise

    return normalise(x)


def drift_signal(store: VectorStore, trained_version: str, *, seed: int = 0) -> DriftSignal | None:
    """Shift between rows written after ``trained_version`` and the rows the index was trained
    on; None when nothing was written since, or the store cannot return its vectors."""
    new = store.ids_since(trained_version)
    if not new:
        return None
    hashes = getattr(store, "content_hashes", None)
    every = list(hashes()) if callable(hashes) else [c.id for c in store.chunks()]
    fresh = set(new)
    old = [i for i in every if i not in fresh]
    if not old:
        return None
    rng = np.random.default_rng(seed)
    pick_new = sorted(rng.choice(len(new), min(len(new), _DRIFT_SAMPLE), replace=False))
    pick_old = sorted(rng.choice(len(old), min(len(old), _DRIFT_SAMPLE), replace=False))
    new_v = _stored_vectors(store, [new[i] for i in pick_new])
    old_v = _stored_vectors(store, [old[i] for i in pick_old])
    if new_v is None or old_v is None:
        return None
    new_u, old_u = _unit(new_v), _unit(old_v)
    a, b = new_u.mean(axis=0), old_u.mean(axis=0)
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    mean_dist = 1.0 - (float(a @ b) / denom if denom > 0 else 0.0)
    centroids, how = _centroids(store, old_u, seed)
    cu = _unit(centroids)
    dist_old = 1.0 - (old_u @ cu.T).max(axis=1)
    dist_new = 1.0 - (new_u @ cu.T).max(axis=1)
    cut = float(np.quantile(dist_old, _FAR_QUANTILE))
    return DriftSignal(
        trained_version=str(trained_version), new_rows=len(new), trained_rows=len(old),
        mean_cosine_distance=mean_dist, share_far=float((dist_new > cut).mean()),
        baseline_share_far=float((dist_old > cut).mean()), centroids=how,
        sampled=len(pick_new) + len(pick_old),
    )


def _centroids(store: VectorStore, trained: np.ndarray, seed: int) -> tuple[np.ndarray, str]:
    from recallwatch.ops._lance_index import LanceIndex, is_lance

    if is_lance(store):
        engine = LanceIndex(store).centroids()  # type: ignore[arg-type]
        # An index folded by optimize() may report one merged partition: no structure to use.
        if engine is not None and len(engine) > 1:
            return engine, f"engine ({len(engine)})"
    try:
        import faiss
    except ImportError as exc:
        raise NotInstalledError("faiss (k-means centroids for the drift signal)", "bench") from exc

    n = max(1, min(256, int(math.sqrt(len(trained))), len(trained) // 39))
    km = faiss.Kmeans(trained.shape[1], n, niter=20, seed=seed, spherical=True, verbose=False)
    km.train(np.ascontiguousarray(trained, dtype=np.float32))
    return np.asarray(km.centroids, dtype=np.float32), f"faiss k-means ({n})"


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
            "monitor_id": self.monitor_id, "notes": list(self.notes),
        }


def run_monitor(
    store: VectorStore, probes: ProbeSet, *, k: int = 10, floor: float = 0.95,
    budget: BudgetPolicy | None = None, history: History | None = None,
    now: datetime | None = None,
) -> MonitorReport:
    """Measure the live index with the probes; record the run in ``history`` when given (the
    error budget is computed over the history's earlier monitor runs of this store)."""
    from recallwatch.ops.calibrate import read_threshold

    if not 0.0 <= floor <= 1.0:
        raise InputError(field="floor", expected="a recall in [0, 1]", found=floor)
    now = now or datetime.now(UTC)
    vectors, fp = probe_vectors(probes, store)
    alarms = []
    problem = index_problem(store)
    if problem is not None:
        alarms.append(problem)
    failures: list[str] = []
    recalls, seconds, _ = recall_vs_exact(store, vectors, k, failures=failures)
    if failures:
        alarms.append(f"the live search fails ({len(failures)} of {len(vectors)} probes): "
                      f"{failures[0]}")
    recall = float(recalls.mean())
    notes: list[str] = []

    threshold = read_threshold(store, fp) if fp is not None else None
    coverage = None
    if threshold is not None:
        top = store.search(vectors, 1)
        coverage = float(np.mean([len(h.ids) > 0 and float(h.scores[0]) >= threshold
                                  for h in top]))
    else:
        notes.append("coverage: no no-result threshold calibrated for this embedder "
                     "(recallwatch calibrate-threshold)")

    build = None if problem else index_build(store)
    age = None
    if build is not None and build.get("built_at"):
        age = max(0.0, (now - datetime.fromisoformat(build["built_at"])).total_seconds())
    drift = None
    if build is not None and build.get("trained_version") is not None:
        try:
            drift = drift_signal(store, str(build["trained_version"]))
        except StoreError as exc:
            notes.append(f"drift: {exc}")
    elif build is None and problem is None:
        notes.append("index: the store reports no ANN index (searches are exact)")

    status = None
    record_time = now.isoformat(timespec="seconds")
    if budget is not None:
        past: list[tuple[datetime, float]] = []
        if history is not None:
            for run in history.monitor_runs(kind=MONITOR_KIND):
                if run.store_uri == store.uri and isinstance(run.payload.get("recall"), float):
                    past.append((datetime.fromisoformat(run.created_at), run.payload["recall"]))
        status = error_budget([*past, (now, recall)], budget, now=now)

    if recall < floor:
        alarms.append(f"recall@{k} vs exact search is {recall:.3f}, under the floor {floor:g}")
    if status is not None and status.spent:
        alarms.append(status.summary())
    report = MonitorReport(
        store=store.uri, index_version=store.current_version(), probes=probes.describe(), k=k,
        floor=floor, recall=recall, recall_min=float(recalls.min()),
        probes_below_floor=int((recalls < floor).sum()),
        latency_ms={"p50": float(np.percentile(seconds, 50) * 1e3),
                    "p99": float(np.percentile(seconds, 99) * 1e3),
                    "mean": float(seconds.mean() * 1e3)},
        coverage=coverage, threshold=threshold, index=build, index_age_seconds=age, drift=drift,
        budget=status, alarms=tuple(alarms), created_at=record_time, notes=tuple(notes),
    )
    if history is not None:
        rid = history.record_monitor_run(MONITOR_KIND, report.to_dict(), store_uri=store.uri,
                                         index_version=report.index_version,
                                         status="alarm" if report.alarm else "ok",
                                         created_at=record_time)
        report = replace(report, monitor_id=rid)
    return report


def post_webhook(url: str, payload: dict[str, Any], *, timeout: float = 10.0) -> int:
    """POST ``payload`` as JSON; returns the HTTP status. Failures raise UsageError naming the URL
    redacted (a webhook URL often carries a token)."""
    from recallwatch._redact import redact

    shown = redact(url)
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--webhook must be an http:// or https:// URL, found {shown!r}")
    body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # the scheme is checked above
            return int(resp.status)
    except OSError as exc:
        raise UsageError(f"webhook {shown} failed: {exc}") from None
