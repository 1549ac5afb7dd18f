"""Reindex and rollback on the adapters without native versions (pgvector, Qdrant, Milvus, Chroma,
faiss/hnswlib index files): what :class:`~recallwatch.stores.versioned.VersionedStore` answers to
:class:`~recallwatch.stores.base.SupportsReindex`.

How the switch is atomic there: version ``N`` is a physical table or collection, and production
is what the engine's view or alias (PostgreSQL, Qdrant, Milvus) or recallwatch's pointer (Chroma,
index files) names. A reindex copies production into a new version with ``new_version()`` — a new
table or collection, so every engine builds its ANN index afresh on today's rows: pgvector's
``CREATE INDEX`` (IVFFlat centroids retrained), a new HNSW graph in Qdrant, Milvus, Chroma and the
index files — with the parameters of the store URI. Nobody reads that version until
``promote(new)`` moves the view/alias/pointer in one atomic operation; the old version stays,
sealed, for :func:`restore`, which moves production back the same way.

The candidate is sealed as soon as it is copied, so a concurrent write continues in a further
copy and never changes what is being verified; before the switch its content hashes must equal
those of the version it was copied from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from recallwatch.errors import StoreError, UsageError
from recallwatch.stores.base import (
    IndexVersion,
    PublishedIndex,
    SupportsContentHashes,
    VectorStore,
)

__all__ = ["VersionedIndex", "content_difference", "restore", "stage_problem"]


class _Version(VectorStore, SupportsContentHashes, Protocol):
    """A read-only view of one version (``checkout``)."""


class VersionedStore(Protocol):
    """What a reindex needs of :class:`~recallwatch.stores.versioned.VersionedStore`, stated
    here so that this module does not import the class that uses it."""

    @property
    def uri(self) -> str: ...

    def production_version(self) -> str | None: ...

    def current_version(self) -> str: ...

    def versions(self) -> list[IndexVersion]: ...

    def checkout(self, version: str) -> _Version: ...

    def new_version(self) -> str: ...

    def seal(self) -> None: ...

    def promote(self, version: str) -> None: ...

    def rollback_to(self, version: str) -> None: ...

    def discard(self, version: str, *, current: str) -> None: ...

    def _build_index_now(self) -> None: ...


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


def stage_problem(store: VersionedStore) -> str | None:
    """Why ``store`` cannot be reindexed now, or None: a reindex copies *production*, so there
    must be one, and it must be the current version (else the switch would promote ungated
    writes)."""
    production, current = store.production_version(), store.current_version()
    if production is None:
        return (f"{store.uri} has no production version to reindex: promote one first "
                "(`recallwatch ops promote`)")
    if production != current:
        return (f"{store.uri}: version {current} is current but version {production} is in "
                f"production; a reindex rebuilds production and would promote version "
                f"{current} ungated: gate and promote it (or not) first")
    return None


class VersionedIndex:
    """One staged reindex of a VersionedStore (a :class:`~recallwatch.stores.base.StagedIndex`):
    a sealed copy of production with a fresh ANN index, to verify, then publish or abandon."""

    def __init__(self, store: VersionedStore, built_on: str, version: str) -> None:
        self.store = store
        self._built_on = built_on
        self.version = version  # the candidate's version
        self._candidate = store.checkout(version)

    @classmethod
    def stage(cls, store: VersionedStore) -> VersionedIndex:
        """Copy production into a new, sealed version with a freshly built ANN index."""
        problem = stage_problem(store)
        if problem is not None:
            raise UsageError(problem)
        production = str(store.production_version())
        candidate = store.new_version()  # a checkout() view refuses this itself
        store.seal()  # later writes go to a further copy; the candidate stays what was verified
        store._build_index_now()  # pgvector defers its ANN index; build it now, in the open
        return cls(store, production, candidate)

    @property
    def built_on(self) -> str:
        return self._built_on

    @property
    def candidate(self) -> VectorStore:
        """A read-only view of the copy (which nobody else reads)."""
        return self._candidate

    def content_check(self) -> str | None:
        """Why the candidate must not be switched to (its content differs), or None."""
        before = self.store.checkout(self._built_on).content_hashes()
        after = self.store.checkout(self.version).content_hashes()
        diff = content_difference(before, after)
        if diff is None:
            return None
        return (f"version {self.version} does not hold the content of version "
                f"{self._built_on} ({diff}): not switched (a reindex must not change content)")

    def publish(self) -> PublishedIndex:
        self.store.promote(self.version)
        old = self._built_on
        created = next((v.created_at for v in self.store.versions() if v.version == old), None)
        # never reindexed: the old version's index was built when the version was created
        return PublishedIndex(
            version=self.version, content_of=old,
            previous={"version": old, "built_at": created.isoformat() if created else None},
            current={"version": self.version}, build={"trained_version": self.version})

    def abandon(self) -> None:
        """Drop the candidate; the version it was copied from is current again."""
        self.store.discard(self.version, current=self._built_on)


def restore(store: VersionedStore, previous: Mapping[str, Any], current: Mapping[str, Any]
            ) -> str:
    """Move production back to the version the last reindex replaced."""
    production = store.production_version()
    if production != str(current.get("version")):
        raise StoreError(
            f"{store.uri}: production is version {production}, not version "
            f"{current.get('version')} that the last reindex switched to (another version "
            "was promoted since); rollback would discard that promotion")
    store.rollback_to(str(previous["version"]))
    return str(previous["version"])
