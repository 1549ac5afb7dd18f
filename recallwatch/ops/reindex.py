"""Background reindex with a verified, atomic switch, and rollback.

:func:`reindex` builds a new index (centroids and codebooks retrained on today's data) while the
current one keeps serving, measures both with the probe set against exact search, and switches to
the new one only when its recall reaches the floor **and** it is not worse than the live index by
more than a stated tolerance (``max_recall_loss``): the 95 % interval of the per-probe recall
difference (new − live; paired bootstrap, :func:`recallwatch.stats.bootstrap_ci`) must stay above
``-max_recall_loss``. A rebuild whose recall may be lower than the live one's beyond that is
refused, with the interval in the reason; the old index stays for :func:`rollback`.
One flow serves every adapter that declares
:class:`~recallwatch.stores.base.SupportsReindex`; the engine mechanics are the store's:

* LanceDB (:mod:`recallwatch.stores.lancedb.index`): unpublished build, detached verification,
  one commit swapping the index;
* the other adapters (:mod:`recallwatch.stores.versioned_index`): a copy of production in a new
  version with a fresh ANN index, verified through ``checkout``, its content hashes checked equal
  to production's, then the engine's atomic view/alias/pointer switch (``promote``).

Every reindex and rollback is recorded in the store's metadata (``index_builds``: when, which
version, what it was trained on; ``reindex``: what rollback restores, with the recall before and
after; ``reindexed_versions``: which version a switched reindex derived from, for
:func:`reindexed_from` and ``recallwatch ops promote``) and, when a history is given, as a
``reindex`` / ``rollback`` monitor record.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recallwatch.errors import StoreError, UsageError
from recallwatch.ops.index_health import index_build, record_index_build
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.recall import ExactSearch, probe_vectors, recall_vs_exact
from recallwatch.stores.base import StagedIndex, SupportsReindex, update_meta

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore

__all__ = [
    "DEFAULT_MAX_RECALL_LOSS",
    "REINDEXED_META_KEY",
    "REINDEX_META_KEY",
    "ReindexResult",
    "recall_difference",
    "refusal",
    "reindex",
    "reindexed_from",
    "rollback",
]

REINDEX_META_KEY = "reindex"  # {"previous": {...}, "current": {...}}: what rollback restores
# {new version: {"from": version, "at", "recall", "floor", "k"}}: versions a verified reindex
# created with the content of "from" (an index-only change)
REINDEXED_META_KEY = "reindexed_versions"
#: The recall@k a new index may lose against the live one (the bound its interval must clear).
DEFAULT_MAX_RECALL_LOSS = 0.01


@dataclass(frozen=True)
class ReindexResult:
    switched: bool
    reason: str
    store: str
    built_on_version: str
    version: str  # the table version after the switch (== built_on when not switched)
    recall_before: float  # the live index, same probes, same k
    recall_candidate: float
    floor: float
    k: int
    build_seconds: float
    verify_seconds: float
    switch_seconds: float
    max_recall_loss: float | None = DEFAULT_MAX_RECALL_LOSS  # None: compared, not enforced
    delta: float = 0.0  # mean over the probes of (new − live) recall
    delta_ci: tuple[float, float] = (0.0, 0.0)  # its 95 % paired bootstrap interval
    probes: int = 0

    def comparison(self) -> str:
        """The new index against the live one, with the interval and the tolerance."""
        low, high = self.delta_ci
        tolerance = ("no tolerance set: only the floor is checked"
                     if self.max_recall_loss is None else
                     f"tolerance: a loss of at most {self.max_recall_loss:g}")
        return (f"new − live recall@{self.k} {self.delta:+.3f}, 95 % interval {low:+.3f} to "
                f"{high:+.3f} over {self.probes} probes; {tolerance}")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["delta_ci"] = list(self.delta_ci)
        return out


def _reindexable(store: VectorStore) -> SupportsReindex:
    if not isinstance(store, SupportsReindex):
        raise UsageError(f"reindex and rollback need a recallwatch adapter with versions "
                         f"(lancedb://, postgresql://, qdrant://, milvus://, chroma://, faiss://, "
                         f"hnswlib://); {store.uri} is {type(store).__name__}")
    return store


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def reindex(
    store: VectorStore, probes: ProbeSet, *, k: int = 10, floor: float = 0.95,
    history: History | None = None, trigger: dict[str, Any] | None = None,
    vectors: np.ndarray | None = None, exact: ExactSearch | None = None,
    max_recall_loss: float | None = DEFAULT_MAX_RECALL_LOSS,
) -> ReindexResult:
    """Build, verify on ``probes`` and switch (or refuse). ``trigger`` says who asked when it was
    not a person (:mod:`recallwatch.ops.autoreindex`), recorded with the history record.
    ``exact``: the exact search both recalls are measured against (default the store's own).
    ``max_recall_loss``: how much recall@k the new index may lose against the live one (the
    lower end of the difference's 95 % interval must not fall under minus this; None: the
    difference is measured and reported, and only the floor is checked)."""
    engine = _reindexable(store)
    if max_recall_loss is not None and not 0.0 <= max_recall_loss <= 1.0:  # NaN included
        raise UsageError(f"the recall a new index may lose must be between 0 and 1, got "
                         f"{max_recall_loss}")
    live_build = index_build(store) or {}  # when the live index was trained, as recorded
    if vectors is None:  # a caller that has just embedded the probes passes them
        vectors, _ = probe_vectors(probes, store)
    started = _now()
    live = recall_vs_exact(store, vectors, k, exact=exact)[0]
    t0 = time.perf_counter()
    staged = engine.stage_index()
    built_on, candidate = staged.built_on, staged.candidate
    t1 = time.perf_counter()
    try:
        new = recall_vs_exact(candidate, vectors, k, exact=exact)[0]
    finally:
        candidate.close()
    t2 = time.perf_counter()
    before, recall = float(live.mean()), float(new.mean())
    delta, ci = recall_difference(live, new)
    result = ReindexResult(False, "", store.uri, built_on, built_on, before, recall, floor, k,
                           t1 - t0, t2 - t1, 0.0, max_recall_loss, delta, ci, len(live))
    refused = refusal(result) or staged.content_check()
    version = built_on
    if refused is None:
        version = _publish(store, staged, live_build, built_on, started, result)
        held = ("" if max_recall_loss is None else
                ", and not worse than the live index's beyond the tolerance")
        reason = (f"recall@{k} of the new index {recall:.3f} ≥ floor {floor:g}{held} (live "
                  f"{before:.3f}; {result.comparison()}): switched")
    else:
        staged.abandon()
        reason = refused
    switched = refused is None
    result = replace(result, switched=switched, reason=reason, version=version,
                     switch_seconds=time.perf_counter() - t2)
    if history is not None:
        history.record_monitor_run("reindex", {**result.to_dict(), "probes": probes.describe(),
                                               **({"auto": trigger} if trigger else {})},
                                   store_uri=store.uri, index_version=version,
                                   status="switched" if switched else "refused")
    return result


def recall_difference(live: np.ndarray, new: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Mean per-probe (new − live) recall and its 95 % paired bootstrap interval."""
    from recallwatch.stats import bootstrap_ci

    ci = bootstrap_ci(live, new)
    return float((new - live).mean()), (ci.low, ci.high)


def refusal(r: ReindexResult) -> str | None:
    """Why the new index of ``r`` must not be switched in (None: it may be, content permitting):
    its recall under the floor, or the lower end of the difference's interval under minus the
    tolerance."""
    if r.recall_candidate < r.floor:
        return (f"recall@{r.k} of the new index {r.recall_candidate:.3f} < floor {r.floor:g}: "
                "not switched; the current index keeps serving")
    if r.max_recall_loss is None or r.delta_ci[0] >= -r.max_recall_loss:
        return None
    narrower = (" The difference itself is within the tolerance, but its interval is not: more "
                "probes narrow it." if r.delta >= -r.max_recall_loss else "")
    return (f"recall@{r.k} of the new index {r.recall_candidate:.3f} against the live index's "
            f"{r.recall_before:.3f}: it may be worse by more than the tolerance "
            f"({r.comparison()}): not switched; the current index keeps serving.{narrower} "
            "Raise the tolerance (--max-recall-loss) to accept a smaller recall, e.g. for a "
            "faster index")


def _publish(store: VectorStore, staged: StagedIndex, live_build: dict[str, Any], built_on: str,
             started: str, r: ReindexResult) -> str:
    """Switch the verified index in and record it; returns the version now live."""
    done = staged.publish()
    version, now = done.version, _now()
    store.set_meta(REINDEX_META_KEY, {
        "previous": _previous(done.previous, live_build, built_on),
        "current": {**done.current, "at": now, "version": version},
        "built_on": built_on, "started_at": started, "switched_at": now,
        "recall_before": r.recall_before, "recall_after": r.recall_candidate, "k": r.k,
        "floor": r.floor, "max_recall_loss": r.max_recall_loss, "delta_ci": list(r.delta_ci)})
    derived = {"from": done.content_of, "at": now, "recall": r.recall_candidate,
               "floor": r.floor, "k": r.k}
    update_meta(store, REINDEXED_META_KEY,
                lambda versions: {**(versions or {}), version: derived})
    record_index_build(store, {"kind": "reindex", "at": now, "built_at": now,
                               "version": version, **done.build})
    return str(version)


def _previous(engine: dict[str, Any] | None, recorded: dict[str, Any], built_on: str
              ) -> dict[str, Any] | None:
    """What rollback restores: the engine's description of the index it replaced, with when that
    index was built (the recorded build first, else the engine's guess) and the version it was
    trained on (the engine's when it knows, else the recorded build's, else the version the new
    index was built on)."""
    if engine is None:
        return None
    return {**engine, "built_at": recorded.get("built_at") or engine.get("built_at"),
            "trained_version": engine.get("trained_version",
                                          recorded.get("trained_version", built_on))}


def reindexed_from(store: VectorStore, version: str) -> str | None:
    """The version whose content ``version`` holds when a switched reindex created it (its index
    alone is new), else None."""
    entry = (store.get_meta(REINDEXED_META_KEY) or {}).get(str(version))
    return None if entry is None else str(entry["from"])


def rollback(store: VectorStore, *, history: History | None = None) -> dict[str, Any]:
    """Put back the index the last reindex replaced (one atomic switch). Returns what was done."""
    engine = _reindexable(store)
    info = store.get_meta(REINDEX_META_KEY) or {}
    previous = info.get("previous")
    if not previous:
        raise StoreError(f"{store.uri}: no previous index to roll back to (no reindex recorded, "
                         "or the last one was already rolled back)")
    version = engine.restore_index(previous, info.get("current") or {})
    now = _now()
    store.set_meta(REINDEX_META_KEY, {"previous": None, "current": None, "rolled_back_at": now,
                                      "rolled_back_to": version})
    record_index_build(store, {"kind": "rollback", "at": now, "built_at": previous["built_at"],
                               "version": version,
                               "trained_version": previous["trained_version"],
                               **({"uuids": previous["uuids"]} if "uuids" in previous else {})})
    done = {"store": store.uri, "version": version, "at": now,
            **({"restored_uuids": previous["uuids"]} if "uuids" in previous else {})}
    if history is not None:
        history.record_monitor_run("rollback", done, store_uri=store.uri,
                                   index_version=version, status="ok")
    return done
