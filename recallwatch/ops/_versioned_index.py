"""Reindex and rollback on the adapters without native versions (pgvector, Qdrant, Milvus, Chroma,
faiss/hnswlib index files), over :class:`~recallwatch.stores._common.VersionedStore`.

How the switch is atomic there: version ``N`` is a physical table or collection, and production
is what the engine's view or alias (PostgreSQL, Qdrant, Milvus) or recallwatch's pointer (Chroma,
index files) names. A reindex copies production into a new version with ``new_version()`` — a new
table or collection, so every engine builds its ANN index afresh on today's rows: pgvector's
``CREATE INDEX`` (IVFFlat centroids retrained), a new HNSW graph in Qdrant, Milvus, Chroma and the
index files — with the parameters of the store URI. Nobody reads that version until
``promote(new)`` moves the view/alias/pointer in one atomic operation; the old version stays,
sealed, for :func:`~recallwatch.ops.reindex.rollback`, which moves production back the same way.

The candidate is sealed as soon as it is copied, so a concurrent write continues in a further
copy and never changes what is being verified; before the switch its content hashes must equal
those of the version it was copied from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recallwatch.errors import StoreError, UsageError

if TYPE_CHECKING:
    from recallwatch.stores._common import VersionedStore
    from recallwatch.stores.base import VectorStore

__all__ = ["VersionedIndex", "content_difference", "is_versioned"]


def is_versioned(store: object) -> bool:
    from recallwatch.stores._common import VersionedStore

    return isinstance(store, VersionedStore)


def content_difference(before: dict[str, str], after: dict[str, str]) -> str | None:
    """What differs between two id -> content hash maps, in one line; None when equal."""
    if before == after:
        return None
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    changed = sorted(i for i in before.keys() & after.keys() if before[i] != after[i])
    parts = [f"{len(ids)} {what} (e.g. {ids[0]})"
             for what, ids in (("added", added), ("removed", removed), ("changed", changed))
             if ids]
    return ", ".join(parts)


class VersionedIndex:
    """One reindex of a VersionedStore: stage a copy, verify it elsewhere, publish or abandon."""

    def __init__(self, store: VersionedStore) -> None:
        self.store = store  # a checkout() view refuses new_version() itself
        self.built_on: str | None = None
        self.candidate: str | None = None

    def stage(self) -> tuple[str, VectorStore]:
        """Copy production into a new, sealed version with a freshly built ANN index. Returns the
        version it was copied from and a read-only view of the copy (which nobody else reads)."""
        store = self.store
        production, current = store.production_version(), store.current_version()
        if production is None:
            raise UsageError(f"{store.uri} has no production version to reindex: promote one "
                             "first (`recallwatch promote`)")
        if production != current:
            raise UsageError(
                f"{store.uri}: version {current} is current but version {production} is in "
                f"production; a reindex rebuilds production and would promote version "
                f"{current} ungated: gate and promote it (or not) first")
        self.built_on = production
        self.candidate = store.new_version()
        store.seal()  # later writes go to a further copy; the candidate stays what was verified
        build = getattr(store, "build_index", None)
        if callable(build):  # pgvector defers its ANN index; build it now, in the open
            build()
        return production, store.checkout(self.candidate)

    def content_check(self) -> str | None:
        """Why the candidate must not be switched to (its content differs), or None."""
        assert self.built_on is not None and self.candidate is not None  # stage() ran
        before = self.store.checkout(self.built_on).content_hashes()
        after = self.store.checkout(self.candidate).content_hashes()
        diff = content_difference(before, after)
        if diff is None:
            return None
        return (f"version {self.candidate} does not hold the content of version "
                f"{self.built_on} ({diff}): not switched (a reindex must not change content)")

    def publish(self) -> str:
        assert self.candidate is not None  # stage() ran
        self.store.promote(self.candidate)
        return self.candidate

    def abandon(self) -> None:
        """Drop the candidate; the version it was copied from is current again."""
        assert self.built_on is not None and self.candidate is not None  # stage() ran
        self.store.discard(self.candidate, current=self.built_on)

    def rollback(self, info: dict[str, Any]) -> str:
        """Move production back to the version the last reindex replaced."""
        store = self.store
        previous, current = info["previous"], info.get("current") or {}
        production = store.production_version()
        if production != str(current.get("version")):
            raise StoreError(
                f"{store.uri}: production is version {production}, not version "
                f"{current.get('version')} that the last reindex switched to (another version "
                "was promoted since); rollback would discard that promotion")
        store.rollback_to(str(previous["version"]))
        return str(previous["version"])
