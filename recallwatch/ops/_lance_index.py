"""LanceDB index operations the monitor and the reindex need, over pylance's public API.

How the switch is atomic: a Lance table is a sequence of manifests, and a reader sees exactly one
manifest per query. The new index is built *unpublished* (``create_index_uncommitted``: its files
are written under ``_indices/`` but no manifest names them, so every reader keeps using the
current index), then verified on a *detached* version (a manifest outside the main line, that no
reader following the latest version sees), and finally published by one ``CreateIndex`` commit
that swaps the old index for the new one. A query that started before the commit finishes on the
old manifest, whose files stay on disk; a query that starts after it uses the new index. Rollback
is the same commit in reverse, with the old index's segments exactly as its manifest entries had
them — including the index details LanceDB needs to open them (without those it ignores the index
with "Index … has version 1, which is not supported" and every search becomes a flat scan), taken
from the commit that created each segment — and it too is checked on a detached version first.

An index's age is the time it was *trained*: ``optimize`` folds new rows into the index with its
existing centroids and codebooks and writes a new segment, so the live segment's creation time is
not the training time; following the segments back through the commits that replaced them gives
the commit that trained them.

The new index is built by the rule ``LanceStore.build_index`` applies (the store's index type,
partitions and PQ sub-vectors for today's row count): a reindex retrains the centroids and
codebooks on today's data.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from recallwatch.errors import StoreError, UsageError
from recallwatch.stores._common import engine_message, guarded

if TYPE_CHECKING:
    import lance
    from lance.dataset import Index

    from recallwatch.stores.lancedb import LanceStore

__all__ = ["IndexState", "LanceIndex", "is_lance"]

# Commits looked back through for the records of the live index's segments (one per write).
_LOOKBACK = 1000


def is_lance(store: object) -> bool:
    from recallwatch.stores.lancedb import LanceStore

    return isinstance(store, LanceStore)


@dataclass(frozen=True)
class IndexState:
    """The live vector index of a table, as its manifest describes it."""

    name: str
    index_type: str
    uuids: tuple[str, ...]
    segments: tuple[dict[str, Any], ...]  # their manifest entries, to re-publish them (rollback)
    trained_version: int  # the oldest table version a segment was built on
    created_at: datetime | None  # when the live segments were written (optimize rewrites them)
    trained_at: datetime | None  # when the index was trained (None: its commit was cleaned up)
    indexed_rows: int
    unindexed_rows: int
    num_partitions: int | None
    num_sub_vectors: int | None


class LanceIndex:
    """Index operations on one LanceStore's table (the latest version). Like the store's own
    methods, each turns an exception of pylance into a StoreError naming the store."""

    # what pylance raises (Rust errors arrive as OSError, ValueError or RuntimeError)
    _engine_errors: ClassVar[tuple[type[BaseException], ...]] = (OSError, ValueError, RuntimeError)

    def __init__(self, store: LanceStore) -> None:
        if store.read_only:
            raise UsageError(f"{store.uri} is a read-only view of a past version")
        self.store = store
        self.table_path = str(store.path / f"{store.table_name}.lance")

    @property
    def uri(self) -> str:
        return self.store.uri

    def dataset(self, version: int | None = None) -> lance.LanceDataset:
        import lance

        try:
            return lance.dataset(self.table_path, version=version)
        except (ValueError, OSError) as exc:
            raise StoreError(f"{self.store.uri}: cannot open table {self.store.table_name!r}: "
                             f"{engine_message(exc)}") from None

    @guarded
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
        trained_version = min(int(s.dataset_version_at_last_update) for s in segs)
        records, trained_at = _history(ds, [s.uuid for s in segs], trained_version)
        return IndexState(
            name=desc.name, index_type=desc.index_type,
            uuids=tuple(s.uuid for s in segs),
            segments=tuple(_entry(desc, s, records.get(s.uuid)) for s in segs),
            trained_version=trained_version,
            created_at=min(created) if created else None,
            trained_at=trained_at,
            indexed_rows=int(stats.get("num_indexed_rows", 0)),
            unindexed_rows=int(stats.get("num_unindexed_rows", 0)),
            num_partitions=None if parts is None else int(parts),
            num_sub_vectors=None if sub is None else int(sub),
        )

    @guarded
    def ignored(self) -> list[Index]:
        """The manifest entries of a vector index that LanceDB does not list (it skips entries
        it cannot read), as the table's last index commit made them; empty when LanceDB lists
        the vector index or none was made."""
        ds = self.dataset()
        if any("vector" in d.field_names for d in ds.describe_indices()):
            return []
        vector_field = ds.schema.get_field_index("vector")
        for version in _main_line(ds):
            op = _operation(ds, version)
            if type(op).__name__ != "CreateIndex":
                continue
            if any(vector_field in list(i.fields) for i in [*op.new_indices, *op.removed_indices]):
                return [i for i in op.new_indices if vector_field in list(i.fields)]
        return []

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

    @guarded
    def fold_new_rows(self) -> None:
        """Add unindexed rows to the live index with its *existing* centroids and codebooks, as
        LanceDB's ``optimize`` does: fast, and the way new topics drift out of reach."""
        self.dataset().optimize.optimize_indices()

    @guarded
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
    @guarded
    def stage(self) -> tuple[int, Any, LanceStore]:
        """Build a new index on the latest version without publishing it. Returns the version it
        was built on, the unpublished index, and a read-only store view that searches with it
        (a detached version: nobody else sees it)."""
        import lance

        ds = self.dataset()
        removed = self._live(ds)  # an index LanceDB ignores is replaced like a live one
        if not removed:
            rows, threshold = ds.count_rows(), self.store.index_threshold
            state = (f"below index_threshold ({threshold:,}), so every search is exact"
                     if rows < threshold else f"past index_threshold ({threshold:,}), but no "
                     "write has built the index yet")
            raise UsageError(f"{self.store.uri} has no vector index to rebuild: its {rows:,} rows "
                             f"are {state}. The index is built on the write that takes the table "
                             "past the threshold, which the store URI sets: "
                             "...?table=NAME&index_threshold=N")
        name = removed[0].name
        dim = int(ds.schema.field("vector").type.list_size)
        # The rule LanceStore.build_index applies, on today's row count (an index folded by
        # optimize() no longer reports the parameters it was built with).
        params: dict[str, Any] = self.store.index_parameters(ds.count_rows(), dim)
        fragments = [f.fragment_id for f in ds.get_fragments()]
        staged = ds.create_index_uncommitted("vector", self.store.index_type, name=name,
                                             metric="cosine", replace=True,
                                             fragment_ids=fragments, **params)
        op = lance.LanceOperation.CreateIndex(new_indices=[staged], removed_indices=removed)
        detached = lance.LanceDataset.commit(ds, op, read_version=ds.version, detached=True)
        return int(ds.version), staged, self._view(int(detached.version))

    @guarded
    def publish(self, staged: Any) -> int:
        """Swap the live index for ``staged`` in one commit; returns the new table version."""
        return self._swap([staged])

    @guarded
    def republish(self, segments: list[dict[str, Any]], name: str) -> int:
        """Put back an earlier index (rollback) in one commit; returns the new table version.
        The commit is tried on a detached version first: if LanceDB would not list the index
        there, nothing is published."""
        import lance

        ds = self.dataset()
        current = {f.fragment_id for f in ds.get_fragments()}
        for seg in segments:
            gone = set(seg["fragment_ids"]) - current
            if gone:
                raise StoreError(
                    f"{self.store.uri}: the previous index covers data files that compaction has "
                    f"since rewritten (fragments {sorted(gone)[:5]}); it cannot be restored: run "
                    "`recallwatch reindex` instead")
        op = lance.LanceOperation.CreateIndex(new_indices=_index_objects(name, segments),
                                              removed_indices=self._live(ds))
        trial = lance.LanceDataset.commit(ds, op, read_version=ds.version, detached=True)
        restored = self.state(trial)
        wanted = {seg["uuid"] for seg in segments}
        if restored is None or set(restored.uuids) != wanted:
            raise StoreError(
                f"{self.store.uri}: LanceDB does not accept the previous index {name!r} "
                f"(segments {', '.join(sorted(wanted))}) back: nothing was changed; run "
                "`recallwatch reindex` to build a new one")
        return self._swap(_index_objects(name, segments))

    def _swap(self, new: list[Any]) -> int:
        import lance

        ds = self.dataset()
        op = lance.LanceOperation.CreateIndex(new_indices=new, removed_indices=self._live(ds))
        done = lance.LanceDataset.commit(ds, op, read_version=ds.version)
        return int(done.version)

    def _live(self, ds: lance.LanceDataset) -> list[Any]:
        """The manifest entries a new index replaces: the live index's, or those of an index
        LanceDB ignores (so its warning stops with the replacement)."""
        live = self.state(ds)
        return self.ignored() if live is None else _index_objects(live.name, live.segments)

    @guarded
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
    """``lance.dataset.Index`` records naming index segments (what a commit adds or removes),
    as their manifest entries have them."""
    from lance.dataset import Index

    out = []
    for s in segments:
        details = s.get("index_details")
        created = s.get("created_at")
        out.append(Index(
            uuid=s["uuid"], name=name, fields=list(s["fields"]),
            dataset_version=int(s["dataset_version"]), fragment_ids=_bitmap(s["fragment_ids"]),
            index_version=int(s["index_version"]),
            created_at=None if created is None else datetime.fromisoformat(created),
            base_id=s.get("base_id"),
            index_details=None if details is None else (
                str(details[0]), base64.b64decode(details[1]))))
    return out


def _entry(desc: Any, seg: Any, record: Index | None) -> dict[str, Any]:
    """One segment's manifest entry as JSON (stored with the reindex for a rollback)."""
    entry: dict[str, Any] = {
        "uuid": seg.uuid, "fields": list(desc.fields),
        "dataset_version": int(seg.dataset_version_at_last_update),
        "fragment_ids": sorted(int(f) for f in seg.fragment_ids),
        "index_version": int(seg.index_version),
        "created_at": None if seg.created_at is None else seg.created_at.isoformat(),
        "base_id": seg.base_id,
        "index_details": None,
    }
    if record is not None and record.index_details is not None:
        type_url, data = record.index_details
        entry["index_details"] = [type_url, base64.b64encode(data).decode("ascii")]
    return entry


def _main_line(ds: lance.LanceDataset) -> list[int]:
    """The table's versions, newest first, as far back as :data:`_LOOKBACK` commits."""
    return sorted((int(v["version"]) for v in ds.versions()), reverse=True)[:_LOOKBACK]


def _operation(ds: lance.LanceDataset, version: int) -> Any:
    try:
        tx = ds.read_transaction(version)
    except (ValueError, OSError, RuntimeError):  # cleaned up
        return None
    return None if tx is None else tx.operation


def _history(ds: lance.LanceDataset, uuids: Sequence[str], trained_version: int
             ) -> tuple[dict[str, Index], datetime | None]:
    """The commit records of the live segments (their full manifest entries), and when the index
    was trained: the live segments are followed back through the commits that folded segments
    into them (``optimize``, which keeps the version the index was trained on) or remapped them
    (compaction), to the commit that trained it. None when that commit was cleaned up."""
    wanted = set(uuids)
    records: dict[str, Index] = {}
    trained: list[datetime] = []
    for version in _main_line(ds):
        if not wanted:
            break
        op = _operation(ds, version)
        if type(op).__name__ == "Rewrite":  # compaction remapped segments to new data files
            for moved in op.rewritten_indices:
                if moved.new_id in wanted:
                    wanted.discard(moved.new_id)
                    wanted.add(moved.old_id)
            continue
        if type(op).__name__ != "CreateIndex":
            continue
        for new in op.new_indices:
            if new.uuid not in wanted:
                continue
            wanted.discard(new.uuid)
            records.setdefault(new.uuid, new)
            folded = [old for old in op.removed_indices if old.name == new.name
                      and int(old.dataset_version) == int(new.dataset_version)]
            wanted.update(old.uuid for old in folded)
            if not folded and int(new.dataset_version) == trained_version and new.created_at:
                trained.append(new.created_at)
    return records, (min(trained) if trained and not wanted else None)


def _bitmap(ids: list[int]) -> Any:
    from lance.bitmap import Bitmap

    return Bitmap(ids)
