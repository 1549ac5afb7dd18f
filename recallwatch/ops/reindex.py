"""Background reindex with a verified, atomic switch, and rollback.

:func:`reindex` builds a new index (centroids and codebooks retrained on today's data) while the
current one keeps serving, measures the new one with the probe set against exact search, and
switches to it only when its recall reaches the floor; the old index stays on disk, tagged, for
:func:`rollback`. On the embedded default (LanceDB) the mechanics are in
:mod:`recallwatch.ops._lance_index`: unpublished build, detached verification, one commit.

Every reindex and rollback is recorded in the store's metadata (``index_builds``: when, which
version, what it was trained on) and, when a history is given, as a ``reindex`` / ``rollback``
monitor record.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recallwatch.errors import StoreError, UsageError
from recallwatch.ops.monitor import probe_vectors, recall_vs_exact, record_index_build
from recallwatch.ops.probes import ProbeSet

if TYPE_CHECKING:
    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore

__all__ = ["PREVIOUS_TAG", "REINDEX_META_KEY", "ReindexResult", "reindex", "rollback"]

REINDEX_META_KEY = "reindex"  # {"previous": {...}, "current": {...}}: what rollback restores
PREVIOUS_TAG = "recallwatch-before-reindex"  # keeps the previous index's files from cleanup


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


def _lance(store: VectorStore) -> Any:
    from recallwatch.ops._lance_index import LanceIndex, is_lance

    if not is_lance(store):
        raise UsageError(f"reindex and rollback support the embedded default (lancedb://) for "
                         f"now; {store.uri} is another engine (rebuild its index with the "
                         "engine's own tools, then check it with `recallwatch monitor`)")
    return LanceIndex(store)  # type: ignore[arg-type]


def reindex(
    store: VectorStore, probes: ProbeSet, *, k: int = 10, floor: float = 0.95,
    history: History | None = None,
) -> ReindexResult:
    lx = _lance(store)
    vectors, _ = probe_vectors(probes, store)
    before = float(recall_vs_exact(store, vectors, k)[0].mean())
    live = lx.state()
    t0 = time.perf_counter()
    built_on, staged, candidate = lx.stage()
    t1 = time.perf_counter()
    try:
        recall = float(recall_vs_exact(candidate, vectors, k)[0].mean())
    finally:
        candidate.close()
    t2 = time.perf_counter()
    switched = recall >= floor
    version = str(built_on)
    if switched:
        lx.tag(PREVIOUS_TAG, built_on)
        version = str(lx.publish(staged))
        now = datetime.now(UTC).isoformat(timespec="seconds")
        new_state = lx.state()
        store.set_meta(REINDEX_META_KEY, {
            "previous": None if live is None else {
                "name": live.name, "segments": list(live.segments), "uuids": list(live.uuids),
                "built_at": None if live.created_at is None else live.created_at.isoformat(),
                "trained_version": live.trained_version},
            "current": {"uuids": list(new_state.uuids) if new_state else [], "at": now,
                        "version": version},
        })
        record_index_build(store, {
            "kind": "reindex", "at": now, "built_at": now, "version": version,
            "trained_version": built_on,
            "uuids": list(new_state.uuids) if new_state else [],
        })
        reason = f"recall@{k} of the new index {recall:.3f} ≥ floor {floor:g}: switched"
    else:
        reason = (f"recall@{k} of the new index {recall:.3f} < floor {floor:g}: not switched; "
                  "the current index keeps serving")
    t3 = time.perf_counter()
    result = ReindexResult(switched, reason, store.uri, str(built_on), version, before, recall,
                           floor, k, t1 - t0, t2 - t1, t3 - t2)
    if history is not None:
        history.record_monitor_run("reindex", {**result.to_dict(), "probes": probes.describe()},
                                   store_uri=store.uri, index_version=version,
                                   status="switched" if switched else "refused")
    return result


def rollback(store: VectorStore, *, history: History | None = None) -> dict[str, Any]:
    """Put back the index the last reindex replaced (one commit). Returns what was done."""
    lx = _lance(store)
    info = store.get_meta(REINDEX_META_KEY) or {}
    previous = info.get("previous")
    if not previous:
        raise StoreError(f"{store.uri}: no previous index to roll back to (no reindex recorded, "
                         "or the last one was already rolled back)")
    live = lx.state()
    current = info.get("current") or {}
    if live is not None and set(live.uuids) != set(current.get("uuids", [])):
        raise StoreError(f"{store.uri}: the live index is not the one the last reindex built "
                         "(it was rebuilt since); rollback would discard that rebuild")
    version = lx.republish(previous["segments"], previous["name"])
    now = datetime.now(UTC).isoformat(timespec="seconds")
    store.set_meta(REINDEX_META_KEY, {"previous": None, "current": None, "rolled_back_at": now})
    record_index_build(store, {"kind": "rollback", "at": now, "built_at": previous["built_at"],
                               "version": str(version),
                               "trained_version": previous["trained_version"],
                               "uuids": previous["uuids"]})
    done = {"store": store.uri, "version": str(version), "restored_uuids": previous["uuids"],
            "at": now}
    if history is not None:
        history.record_monitor_run("rollback", done, store_uri=store.uri,
                                   index_version=str(version), status="ok")
    return done
