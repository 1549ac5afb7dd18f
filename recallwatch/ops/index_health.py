"""The live index's health: when it was trained and on which version, and whether it can serve.

Builds are recorded in the store's metadata (``index_builds``, the last 50: every reindex and
rollback, with when, which version, what it was trained on); an engine that describes its own
index (:class:`~recallwatch.stores.base.SupportsIndexInspection`: LanceDB) is asked too, and wins
when the last record no longer names the live index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recallwatch.stores.base import SupportsIndexInspection, update_meta

if TYPE_CHECKING:
    from recallwatch.stores.base import VectorStore

__all__ = ["INDEX_BUILDS_META_KEY", "index_build", "index_problem", "record_index_build"]

INDEX_BUILDS_META_KEY = "index_builds"  # [{at, built_at, version, trained_version, uuids, kind}]
_KEEP_BUILDS = 50


def record_index_build(store: VectorStore, record: dict[str, Any]) -> None:
    update_meta(store, INDEX_BUILDS_META_KEY,
                lambda builds: [*(builds or []), record][-_KEEP_BUILDS:])


def index_build(store: VectorStore) -> dict[str, Any] | None:
    """When the live index was trained and on which version: the last build this package
    recorded if it still names the live index, else what the engine reports. None when the store
    has no index (LanceDB: none that LanceDB lists)."""
    state = None
    if isinstance(store, SupportsIndexInspection):
        state = store.index_state()
        if state is None:
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
    """Why the store's ANN index cannot serve although one was built, or None: what the engine
    reports (damaged files, an entry it ignores), or an index that a recorded build left and the
    engine no longer lists. The result is still right then, so recall alone never shows it."""
    if not isinstance(store, SupportsIndexInspection):
        return None
    problem = store.index_problem()
    if problem is not None:
        return problem
    builds = store.get_meta(INDEX_BUILDS_META_KEY) or []
    if builds and builds[-1].get("uuids") and store.index_state() is None:
        last = builds[-1]
        return (f"the vector index is missing: LanceDB lists none, but the last {last['kind']} "
                f"({last.get('at')}) left one; every search scans all rows")
    return None
