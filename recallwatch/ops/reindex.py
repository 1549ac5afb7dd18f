"""Background reindex with a verified, atomic switch, and rollback.

:func:`reindex` builds a new index (centroids and codebooks retrained on today's data) while the
current one keeps serving, measures the new one with the probe set against exact search, and
switches to it only when its recall reaches the floor; the old index stays for :func:`rollback`.
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
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recallwatch.errors import StoreError, UsageError
from recallwatch.ops.index_health import index_build, record_index_build
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.recall import ExactSearch, probe_vectors, recall_vs_exact
from recallwatch.stores.base import SupportsReindex, update_meta

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore

__all__ = [
    "REINDEXED_META_KEY",
    "REINDEX_META_KEY",
    "ReindexResult",
    "reindex",
    "reindexed_from",
    "rollback",
]

REINDEX_META_KEY = "reindex"  # {"previous": {...}, "current": {...}}: what rollback restores
# {new version: {"from": version, "at", "recall", "floor", "k"}}: versions a verified reindex
# created with the content of "from" (an index-only change)
REINDEXED_META_KEY = "reindexed_versions"


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
) -> ReindexResult:
    """Build, verify on ``probes`` and switch (or refuse). ``trigger`` says who asked when it was
    not a person (:mod:`recallwatch.ops.autoreindex`), recorded with the history record.
    ``exact``: the exact search both recalls are measured against (default the store's own)."""
    engine = _reindexable(store)
    live_build = index_build(store) or {}  # when the live index was trained, as recorded
    if vectors is None:  # a caller that has just embedded the probes passes them
        vectors, _ = probe_vectors(probes, store)
    started = _now()
    before = float(recall_vs_exact(store, vectors, k, exact=exact)[0].mean())
    t0 = time.perf_counter()
    staged = engine.stage_index()
    built_on, candidate = staged.built_on, staged.candidate
    t1 = time.perf_counter()
    try:
        recall = float(recall_vs_exact(candidate, vectors, k, exact=exact)[0].mean())
    finally:
        candidate.close()
    t2 = time.perf_counter()
    version = built_on
    refusal = None
    if recall < floor:
        refusal = (f"recall@{k} of the new index {recall:.3f} < floor {floor:g}: not switched; "
                   "the current index keeps serving")
    else:
        refusal = staged.content_check()
    if refusal is None:
        done = staged.publish()
        version, now = done.version, _now()
        store.set_meta(REINDEX_META_KEY, {
            "previous": _previous(done.previous, live_build, built_on),
            "current": {**done.current, "at": now, "version": version},
            "built_on": built_on, "started_at": started, "switched_at": now,
            "recall_before": before, "recall_after": recall, "k": k, "floor": floor})
        derived = {"from": done.content_of, "at": now, "recall": recall, "floor": floor, "k": k}
        update_meta(store, REINDEXED_META_KEY,
                    lambda versions: {**(versions or {}), version: derived})
        record_index_build(store, {"kind": "reindex", "at": now, "built_at": now,
                                   "version": version, **done.build})
        reason = f"recall@{k} of the new index {recall:.3f} ≥ floor {floor:g}: switched"
    else:
        staged.abandon()
        reason = refusal
    switched = refusal is None
    t3 = time.perf_counter()
    result = ReindexResult(switched, reason, store.uri, built_on, version, before, recall,
                           floor, k, t1 - t0, t2 - t1, t3 - t2)
    if history is not None:
        history.record_monitor_run("reindex", {**result.to_dict(), "probes": probes.describe(),
                                               **({"auto": trigger} if trigger else {})},
                                   store_uri=store.uri, index_version=version,
                                   status="switched" if switched else "refused")
    return result


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
