"""LanceDB index operations the monitor and the reindex need, over pylance's public API.

How the switch is atomic: a Lance table is a sequence of manifests, and a reader sees exactly one
manifest per query. The new index is built *unpublished* (``create_index_uncommitted``: its files
are written under ``_indices/`` but no manifest names them, so every reader keeps using the
current index), then verified on a *detached* version (a manifest outside the main line, that no
reader following the latest version sees), and finally published by one ``CreateIndex`` commit
that swaps the old index for the new one. A query that started before the commit finishes on the
old manifest, whose files stay on disk; a query that starts after it uses the new index. Rollback
is the same commit in reverse, with the old index's segments.

The new index is built by the rule ``LanceStore.build_index`` applies (the store's index type,
partitions and PQ sub-vectors for today's row count): a reindex retrains the centroids and
codebooks on today's data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import StoreError, UsageError

if TYPE_CHECKING:
    import lance

    from recallwatch.stores.lancedb import LanceStore

__all__ = ["IndexState", "LanceIndex", "is_lance"]


def is_lance(store: object) -> bool:
    from recallwatch.stores.lancedb import LanceStore

    return isinstance(store, LanceStore)


@dataclass(frozen=True)
class IndexState:
    """The live vector index of a table, as its manifest describes it."""

    name: str
    index_type: str
    uuids: tuple[str, ...]
    segments: tuple[dict[str, Any], ...]  # enough to re-publish them (rollback)
    trained_version: int  # the oldest table version a segment was built on
    created_at: datetime | None
    indexed_rows: int
    unindexed_rows: int
    num_partitions: int | None
    num_sub_vectors: int | None


class LanceIndex:
    """Index operations on one LanceStore's table (the latest version)."""

    def __init__(self, store: LanceStore) -> None:
        if store.read_only:
            raise UsageError(f"{store.uri} is a read-only view of a past version")
        self.store = store
        self.uri = str(store.path / f"{store.table_name}.lance")

    def dataset(self, version: int | None = None) -> lance.LanceDataset:
        import lance

        try:
            return lance.dataset(self.uri, version=version)
        except (ValueError, OSError) as exc:
            raise StoreError(f"{self.store.uri}: cannot open table {self.store.table_name!r}: "
                             f"{exc}") from None

    def state(self, ds: lance.LanceDataset | None = None) -> IndexState | None:
        """The vector index on ``vector``, or None when the table has none."""
        ds = ds or self.dataset()
        desc = next((d for d in ds.describe_indices() if "vector" in d.field_names), None)
        if desc is None:
            return None
        segs = list(desc.segments)
        created = [s.created_at for s in segs if s.created_at is not None]
        stats = ds.stats.index_stats(desc.name)
        details = stats.get("indices", [{}])[0] if stats.get("indices") else {}
        sub = (details.get("sub_index", {}) or {}).get("num_sub_vectors")
        parts = details.get("num_partitions")
        return IndexState(
            name=desc.name, index_type=desc.index_type,
            uuids=tuple(s.uuid for s in segs),
            segments=tuple({"uuid": s.uuid, "fields": list(desc.fields),
                            "dataset_version": int(s.dataset_version_at_last_update),
                            "fragment_ids": sorted(int(f) for f in s.fragment_ids),
                            "index_version": int(s.index_version)} for s in segs),
            trained_version=min(int(s.dataset_version_at_last_update) for s in segs),
            created_at=min(created) if created else None,
            indexed_rows=int(stats.get("num_indexed_rows", 0)),
            unindexed_rows=int(stats.get("num_unindexed_rows", 0)),
            num_partitions=None if parts is None else int(parts),
            num_sub_vectors=None if sub is None else int(sub),
        )

    def centroids(self) -> np.ndarray | None:
        """The IVF centroids of the live index (Lance exposes them), or None."""
        try:
            arr = self.dataset().centroids(column="vector")
        except (ValueError, RuntimeError, OSError):
            return None
        if arr is None or len(arr) == 0:
            return None
        dim = arr.type.list_size
        return np.asarray(arr.flatten().to_numpy(zero_copy_only=False),
                          dtype=np.float32).reshape(-1, dim)

    def fold_new_rows(self) -> None:
        """Add unindexed rows to the live index with its *existing* centroids and codebooks, as
        LanceDB's ``optimize`` does: fast, and the way new topics drift out of reach."""
        self.dataset().optimize.optimize_indices()

    def vectors(self, ids: list[str]) -> np.ndarray:
        """The stored vectors of ``ids``, in that order (a missing id is an error)."""
        found: dict[str, np.ndarray] = {}
        ds = self.dataset()
        for start in range(0, len(ids), 2000):
            batch = ids[start:start + 2000]
            where = "id IN (" + ", ".join("'" + i.replace("'", "''") + "'" for i in batch) + ")"
            t = ds.to_table(columns=["id", "vector"], filter=where)
            col = t.column("vector").combine_chunks()
            dim = col.type.list_size
            vecs = np.asarray(col.flatten().to_numpy(zero_copy_only=False),
                              dtype=np.float32).reshape(-1, dim)
            found.update(zip(t.column("id").to_pylist(), vecs, strict=True))
        missing = [i for i in ids if i not in found]
        if missing:
            raise StoreError(f"{self.store.uri} holds no chunk {missing[0]!r}")
        return np.stack([found[i] for i in ids]) if ids else np.empty((0, 0), np.float32)

    # -- staged build, verification and atomic switch -----------------------------------------
    def stage(self) -> tuple[int, Any, LanceStore]:
        """Build a new index on the latest version without publishing it. Returns the version it
        was built on, the unpublished index, and a read-only store view that searches with it
        (a detached version: nobody else sees it)."""
        import lance

        ds = self.dataset()
        live = self.state(ds)
        if live is None:
            rows, threshold = ds.count_rows(), self.store.index_threshold
            state = (f"below index_threshold ({threshold:,}), so every search is exact"
                     if rows < threshold else f"past index_threshold ({threshold:,}), but no "
                     "write has built the index yet")
            raise UsageError(f"{self.store.uri} has no vector index to rebuild: its {rows:,} rows "
                             f"are {state}. The index is built on the write that takes the table "
                             "past the threshold, which the store URI sets: "
                             "...?table=NAME&index_threshold=N")
        dim = int(ds.schema.field("vector").type.list_size)
        # The rule LanceStore.build_index applies, on today's row count (an index folded by
        # optimize() no longer reports the parameters it was built with).
        params: dict[str, Any] = self.store.index_parameters(ds.count_rows(), dim)
        fragments = [f.fragment_id for f in ds.get_fragments()]
        staged = ds.create_index_uncommitted("vector", self.store.index_type, name=live.name,
                                             metric="cosine", replace=True,
                                             fragment_ids=fragments, **params)
        removed = _index_objects(live.name, live.segments)
        op = lance.LanceOperation.CreateIndex(new_indices=[staged], removed_indices=removed)
        detached = lance.LanceDataset.commit(ds, op, read_version=ds.version, detached=True)
        return int(ds.version), staged, self._view(int(detached.version))

    def publish(self, staged: Any) -> int:
        """Swap the live index for ``staged`` in one commit; returns the new table version."""
        return self._swap([staged])

    def republish(self, segments: list[dict[str, Any]], name: str) -> int:
        """Put back an earlier index (rollback) in one commit; returns the new table version."""
        current = {f.fragment_id for f in self.dataset().get_fragments()}
        for seg in segments:
            gone = set(seg["fragment_ids"]) - current
            if gone:
                raise StoreError(
                    f"{self.store.uri}: the previous index covers data files that compaction has "
                    f"since rewritten (fragments {sorted(gone)[:5]}); it cannot be restored: run "
                    "`recallwatch reindex` instead")
        return self._swap(_index_objects(name, segments))

    def _swap(self, new: list[Any]) -> int:
        import lance

        ds = self.dataset()
        live = self.state(ds)
        removed = [] if live is None else _index_objects(live.name, live.segments)
        op = lance.LanceOperation.CreateIndex(new_indices=new, removed_indices=removed)
        done = lance.LanceDataset.commit(ds, op, read_version=ds.version)
        return int(done.version)

    def tag(self, name: str, version: int) -> None:
        """Tag a version so cleanup keeps it (and the index files it names)."""
        tags = self.dataset().tags
        if name in tags.list():
            tags.update(name, version)
        else:
            tags.create(name, version)

    def _view(self, version: int) -> LanceStore:
        from recallwatch.stores.lancedb import LanceStore

        s = self.store
        return LanceStore(s.path, s.table_name, index_threshold=s.index_threshold,
                          index_type=s.index_type, nprobes=s.nprobes, ef=s.ef,
                          refine_factor=s.refine_factor, uri=s.uri, version=version)


def _index_objects(name: str, segments: Sequence[dict[str, Any]]) -> list[Any]:
    """``lance.dataset.Index`` records naming index segments (what a commit adds or removes)."""
    from lance.dataset import Index

    return [Index(uuid=s["uuid"], name=name, fields=list(s["fields"]),
                  dataset_version=int(s["dataset_version"]),
                  fragment_ids=_bitmap(s["fragment_ids"]), index_version=int(s["index_version"]))
            for s in segments]


def _bitmap(ids: list[int]) -> Any:
    from lance.bitmap import Bitmap

    return Bitmap(ids)
