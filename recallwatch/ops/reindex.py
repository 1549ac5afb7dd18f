"""Background reindex with a verified, atomic switch, and rollback.

:func:`reindex` builds a new index (centroids and codebooks retrained on today's data) while the
current one keeps serving, measures the new one with the probe set against exact search, and
switches to it only when its recall reaches the floor; the old index stays for :func:`rollback`.
One flow serves every adapter; the engine mechanics are an :class:`_Engine`:

* LanceDB (:mod:`recallwatch.ops._lance_index`): unpublished build, detached verification, one
  commit swapping the index;
* the other adapters (:mod:`recallwatch.ops._versioned_index`): a copy of production in a new
  version with a fresh ANN index, verified through ``checkout``, its content hashes checked equal
  to production's, then the engine's atomic view/alias/pointer switch (``promote``).

Every reindex and rollback is recorded in the store's metadata (``index_builds``: when, which
version, what it was trained on; ``reindex``: what rollback restores, with the recall before and
after; ``reindexed_versions``: which version a switched reindex derived from, for
:func:`reindexed_from` and ``recallwatch promote``) and, when a history is given, as a
``reindex`` / ``rollback`` monitor record.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from recallwatch.errors import StoreError, UsageError
from recallwatch.ops.monitor import probe_vectors, recall_vs_exact, record_index_build
from recallwatch.ops.probes import ProbeSet

if TYPE_CHECKING:
    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore

__all__ = [
    "PREVIOUS_TAG",
    "REINDEXED_META_KEY",
    "REINDEX_META_KEY",
    "ReindexResult",
    "reindex",
    "reindexed_from",
    "rollback",
]

REINDEX_META_KEY = "reindex"  # {"previous": {...}, "current": {...}}: what rollback restores
PREVIOUS_TAG = "recallwatch-before-reindex"  # keeps the previous index's files from cleanup
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


class _Engine(Protocol):
    """What one reindex needs from an engine; :func:`reindex` does the rest, the same for all."""

    def stage(self) -> tuple[str, VectorStore]:
        """Build the new index where no reader sees it: the version it was built on, and a
        read-only view that searches with it (closed by the caller)."""
        ...

    def content_check(self) -> str | None:
        """Why the staged index must not be switched to although it passed (None: it may)."""
        ...

    def publish(self) -> tuple[str, str, dict[str, Any]]:
        """Switch atomically: the new version, the version whose content it has, and what
        rollback needs to restore the old index."""
        ...

    def abandon(self) -> None: ...

    def rollback(self, previous: dict[str, Any], current: dict[str, Any]) -> str:
        """Restore ``previous`` (checking ``current`` is still live); the resulting version."""
        ...


class _Lance:
    """LanceDB: see :mod:`recallwatch.ops._lance_index`."""

    def __init__(self, store: VectorStore) -> None:
        from recallwatch.ops._lance_index import LanceIndex
        from recallwatch.ops.monitor import index_build

        self.store = store
        self.lx = LanceIndex(store)  # type: ignore[arg-type]
        self.live = self.lx.state()
        self.live_build = index_build(store)  # when the live index was trained
        self.staged: Any = None
        self.built_on = 0

    def stage(self) -> tuple[str, VectorStore]:
        self.built_on, self.staged, candidate = self.lx.stage()
        return str(self.built_on), candidate

    def content_check(self) -> str | None:
        return None  # the switch is an index-only commit: the rows are the table's, untouched

    def publish(self) -> tuple[str, str, dict[str, Any]]:
        self.lx.tag(PREVIOUS_TAG, self.built_on)
        version = self.lx.publish(self.staged)
        live, new = self.live, self.lx.state()
        # the segments' manifest entries as they are, so a rollback restores exactly this index
        previous = None if live is None else {
            "name": live.name, "segments": list(live.segments), "uuids": list(live.uuids),
            "built_at": (self.live_build or {}).get("built_at"),
            "trained_version": live.trained_version}
        # A CreateIndex commit changes no row: version N holds the data of version N - 1.
        return str(version), str(version - 1), {
            "previous": previous, "current": {"uuids": list(new.uuids) if new else []},
            "build": {"trained_version": self.built_on,
                      "uuids": list(new.uuids) if new else []}}

    def abandon(self) -> None:
        pass  # nothing was published; LanceDB's cleanup removes the unpublished files

    def rollback(self, previous: dict[str, Any], current: dict[str, Any]) -> str:
        live = self.lx.state()
        if live is not None and set(live.uuids) != set(current.get("uuids", [])):
            raise StoreError(f"{self.store.uri}: the live index is not the one the last reindex "
                             "built (it was rebuilt since); rollback would discard that rebuild")
        return str(self.lx.republish(previous["segments"], previous["name"]))


class _Versioned:
    """pgvector, Qdrant, Milvus, Chroma, index files (:mod:`recallwatch.ops._versioned_index`)."""

    def __init__(self, store: VectorStore) -> None:
        from recallwatch.ops._versioned_index import VersionedIndex
        from recallwatch.ops.monitor import index_build

        self.store = store
        self.vx = VersionedIndex(store)  # type: ignore[arg-type]
        self.live_build = index_build(store)

    def stage(self) -> tuple[str, VectorStore]:
        return self.vx.stage()

    def content_check(self) -> str | None:
        return self.vx.content_check()

    def publish(self) -> tuple[str, str, dict[str, Any]]:
        assert self.vx.built_on is not None  # stage() ran
        old = self.vx.built_on
        version = self.vx.publish()
        created = next((v.created_at for v in self.store.versions() if v.version == old), None)
        last = self.live_build or {}
        # never reindexed: the old version's index was built when the version was created
        built_at = last.get("built_at") or (created.isoformat() if created else None)
        return version, old, {
            "previous": {"version": old, "built_at": built_at,
                         "trained_version": last.get("trained_version", old)},
            "current": {"version": version},
            "build": {"trained_version": version}}

    def abandon(self) -> None:
        self.vx.abandon()

    def rollback(self, previous: dict[str, Any], current: dict[str, Any]) -> str:
        return self.vx.rollback({"previous": previous, "current": current})


def _engine(store: VectorStore) -> _Engine:
    from recallwatch.ops._lance_index import is_lance
    from recallwatch.ops._versioned_index import is_versioned

    if is_lance(store):
        return _Lance(store)
    if is_versioned(store):
        return _Versioned(store)
    raise UsageError(f"reindex and rollback need a recallwatch adapter with versions (lancedb://, "
                     f"postgresql://, qdrant://, milvus://, chroma://, faiss://, hnswlib://); "
                     f"{store.uri} is {type(store).__name__}")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def reindex(
    store: VectorStore, probes: ProbeSet, *, k: int = 10, floor: float = 0.95,
    history: History | None = None,
) -> ReindexResult:
    engine = _engine(store)
    vectors, _ = probe_vectors(probes, store)
    started = _now()
    before = float(recall_vs_exact(store, vectors, k)[0].mean())
    t0 = time.perf_counter()
    built_on, candidate = engine.stage()
    t1 = time.perf_counter()
    try:
        recall = float(recall_vs_exact(candidate, vectors, k)[0].mean())
    finally:
        candidate.close()
    t2 = time.perf_counter()
    version = built_on
    refusal = None
    if recall < floor:
        refusal = (f"recall@{k} of the new index {recall:.3f} < floor {floor:g}: not switched; "
                   "the current index keeps serving")
    else:
        refusal = engine.content_check()
    if refusal is None:
        version, content_of, rollback_info = engine.publish()
        now = _now()
        build = rollback_info.pop("build")
        store.set_meta(REINDEX_META_KEY, {
            **rollback_info, "current": {**rollback_info["current"], "at": now, "version": version},
            "built_on": built_on, "started_at": started, "switched_at": now,
            "recall_before": before, "recall_after": recall, "k": k, "floor": floor})
        derived = dict(store.get_meta(REINDEXED_META_KEY) or {})
        derived[version] = {"from": content_of, "at": now, "recall": recall, "floor": floor,
                            "k": k}
        store.set_meta(REINDEXED_META_KEY, derived)
        record_index_build(store, {"kind": "reindex", "at": now, "built_at": now,
                                   "version": version, **build})
        reason = f"recall@{k} of the new index {recall:.3f} ≥ floor {floor:g}: switched"
    else:
        engine.abandon()
        reason = refusal
    switched = refusal is None
    t3 = time.perf_counter()
    result = ReindexResult(switched, reason, store.uri, built_on, version, before, recall,
                           floor, k, t1 - t0, t2 - t1, t3 - t2)
    if history is not None:
        history.record_monitor_run("reindex", {**result.to_dict(), "probes": probes.describe()},
                                   store_uri=store.uri, index_version=version,
                                   status="switched" if switched else "refused")
    return result


def reindexed_from(store: VectorStore, version: str) -> str | None:
    """The version whose content ``version`` holds when a switched reindex created it (its index
    alone is new), else None."""
    entry = (store.get_meta(REINDEXED_META_KEY) or {}).get(str(version))
    return None if entry is None else str(entry["from"])


def rollback(store: VectorStore, *, history: History | None = None) -> dict[str, Any]:
    """Put back the index the last reindex replaced (one atomic switch). Returns what was done."""
    engine = _engine(store)
    info = store.get_meta(REINDEX_META_KEY) or {}
    previous = info.get("previous")
    if not previous:
        raise StoreError(f"{store.uri}: no previous index to roll back to (no reindex recorded, "
                         "or the last one was already rolled back)")
    version = engine.rollback(previous, info.get("current") or {})
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
