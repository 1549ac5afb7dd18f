"""LanceDB's ANN index: how it is built, inspected, rebuilt and rolled
back, over pylance's public API. What
:class:`~recallwatch.stores.lancedb.store.LanceStore` answers to
``SupportsReindex`` and ``SupportsIndexInspection`` (:mod:`recallwatch.stores.base`); the
manifest records it reads and writes are :mod:`recallwatch.stores.lancedb.manifest`.

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

Every index is built by one rule, :func:`index_parameters` (the store's index type, partitions
and PQ sub-vectors for today's row count): the first build, and a reindex, which retrains the
centroids and codebooks on today's data.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import numpy as np

from recallwatch.errors import StoreError, UsageError
from recallwatch.stores.arrow import vectors_of
from recallwatch.stores.base import IndexState, PublishedIndex
from recallwatch.stores.failures import engine_message, guarded
from recallwatch.stores.lancedb.manifest import (
    history,
    index_objects,
    main_line,
    operation,
    segment_entry,
)

if TYPE_CHECKING:
    import lance
    from lance.dataset import Index
    from lancedb.index import IvfHnswSq, IvfPq

    from recallwatch.stores.base import VectorStore
    from recallwatch.stores.lancedb.read import ReadTable

__all__ = [
    "PREVIOUS_TAG",
    "IndexType",
    "IndexedTable",
    "LanceIndex",
    "StagedLanceIndex",
    "index_config",
    "index_parameters",
    "needs_index",
    "restore",
    "vector_index",
]

IndexType = Literal["IVF_HNSW_SQ", "IVF_PQ"]
PREVIOUS_TAG = "recallwatch-before-reindex"  # keeps the previous index's files from cleanup


class IndexedTable(Protocol):
    """What the index operations read of the store that owns the table (a
    :class:`~recallwatch.stores.lancedb.store.LanceStore`)."""

    path: Path
    table_name: str
    index_threshold: int
    index_type: IndexType

    @property
    def uri(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def pinned(self) -> int | None:
        """The version a read-only view reads, or None (the latest)."""
        ...

    def view(self, version: int) -> VectorStore:
        """A read-only view of table version ``version`` with the store's parameters."""
        ...


def vector_index(tbl: ReadTable) -> Any:
    """The listing of the table's vector index, or None."""
    return next((i for i in tbl.list_indices() if "vector" in i.columns), None)


def needs_index(tbl: ReadTable, threshold: int) -> bool:
    """Whether a write left the table big enough for a first ANN index to pay off. Rebuilding
    an index that too many new rows lie outside is verified first, so it is not done here: an
    ingestion does it through :mod:`recallwatch.ops.autoreindex` (rows outside the index are
    scanned exactly meanwhile)."""
    return tbl.count_rows() >= threshold and vector_index(tbl) is None


def index_parameters(index_type: IndexType, rows: int, dim: int) -> dict[str, int]:
    """The parameters every index of ``index_type`` is built with on ``rows`` × ``dim``."""
    if index_type == "IVF_PQ":
        # ~16 dimensions per PQ sub-vector, and a divisor of dim (LanceDB requires it).
        sub = next(s for s in (dim // 16, dim // 8, dim // 4, dim // 2, 1)
                   if s and dim % s == 0)
        # sqrt(n) lists, but at least 256 training rows per list (LanceDB's own floor).
        lists = max(1, min(int(math.sqrt(rows)), rows // 256))
        return {"num_partitions": lists, "num_sub_vectors": sub}
    # HNSW does the fine search inside each partition: few, large partitions.
    return {"num_partitions": max(1, rows // 100_000)}


def index_config(index_type: IndexType, rows: int, dim: int) -> IvfHnswSq | IvfPq:
    """LanceDB's index configuration for :func:`index_parameters` (cosine, always)."""
    from lancedb.index import IvfHnswSq, IvfPq

    params = index_parameters(index_type, rows, dim)
    if index_type == "IVF_PQ":
        return IvfPq(distance_type="cosine", num_partitions=params["num_partitions"],
                     num_sub_vectors=params["num_sub_vectors"])
    return IvfHnswSq(distance_type="cosine", num_partitions=params["num_partitions"])


class LanceIndex:
    """Index operations on one LanceStore's table: inspection of the version the store reads
    (the latest; a read-only view's own), and the build, switch and rollback on the latest. Like
    the store's own methods, each turns an exception of pylance into a StoreError naming the
    store."""

    # what pylance raises (Rust errors arrive as OSError, ValueError or RuntimeError)
    _engine_errors: ClassVar[tuple[type[BaseException], ...]] = (OSError, ValueError, RuntimeError)

    def __init__(self, store: IndexedTable) -> None:
        self.store = store
        self.table_path = str(store.path / f"{store.table_name}.lance")

    @property
    def uri(self) -> str:
        return self.store.uri

    def dataset(self, version: int | None = None) -> lance.LanceDataset:
        """The table at ``version`` (default: the version the store reads)."""
        import lance

        try:
            return lance.dataset(self.table_path,
                                 version=self.store.pinned if version is None else version)
        except (ValueError, OSError) as exc:
            raise StoreError(f"{self.store.uri}: cannot open table {self.store.table_name!r}: "
                             f"{engine_message(exc)}") from None

    def _writable(self) -> None:
        if self.store.read_only:
            raise UsageError(f"{self.store.uri} is a read-only view of a past version")

    @guarded
    def state(self, ds: lance.LanceDataset | None = None) -> IndexState | None:
        """The vector index on ``vector``, or None when the table has none."""
        ds = ds or self.dataset()
        desc = next((d for d in ds.describe_indices() if "vector" in d.field_names), None)
        if desc is None:
            return None
        segs = list(desc.segments)
        created = [s.created_at for s in segs if s.created_at is not None]
        # The statistics need no centroids (centroids() reads them); saying so also keeps
        # Lance from printing a warning about their memory on every call.
        os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
        stats = ds.stats.index_stats(desc.name)
        details = stats.get("indices", [{}])[0] if stats.get("indices") else {}
        sub = (details.get("sub_index", {}) or {}).get("num_sub_vectors")
        parts = details.get("num_partitions")
        trained_version = min(int(s.dataset_version_at_last_update) for s in segs)
        records, trained_at = history(ds, [s.uuid for s in segs], trained_version)
        return IndexState(
            name=desc.name, index_type=desc.index_type,
            uuids=tuple(s.uuid for s in segs),
            segments=tuple(segment_entry(desc, s, records.get(s.uuid)) for s in segs),
            trained_version=trained_version,
            created_at=min(created) if created else None,
            trained_at=trained_at,
            indexed_rows=int(stats.get("num_indexed_rows", 0)),
            unindexed_rows=int(stats.get("num_unindexed_rows", 0)),
            num_partitions=None if parts is None else int(parts),
            num_sub_vectors=None if sub is None else int(sub),
        )

    @guarded
    def size_bytes(self) -> int:
        """Bytes of the vector index of the version read (0 without one): the engine's own
        figure, else the size of the segments' files under ``_indices/``."""
        ds = self.dataset()
        desc = next((d for d in ds.describe_indices() if "vector" in d.field_names), None)
        if desc is None:
            return 0
        if desc.total_size_bytes is not None:
            return int(desc.total_size_bytes)
        root = Path(self.table_path) / "_indices"
        return sum(f.stat().st_size for seg in desc.segments
                   for f in (root / seg.uuid).rglob("*") if f.is_file())

    @guarded
    def ignored(self) -> list[Index]:
        """The manifest entries of a vector index that LanceDB does not list (it skips entries
        it cannot read), as the table's last index commit made them; empty when LanceDB lists
        the vector index or none was made."""
        ds = self.dataset()
        if any("vector" in d.field_names for d in ds.describe_indices()):
            return []
        vector_field = ds.schema.get_field_index("vector")
        for version in main_line(ds):
            op = operation(ds, version)
            if type(op).__name__ != "CreateIndex":
                continue
            if any(vector_field in list(i.fields) for i in [*op.new_indices, *op.removed_indices]):
                return [i for i in op.new_indices if vector_field in list(i.fields)]
        return []

    def problem(self) -> str | None:
        """Why the index cannot serve although one was built, or None. LanceDB skips an index
        entry it cannot read (logging "Index … has version 1, which is not supported") and then
        searches every row: the result is still right, so recall alone never shows it."""
        try:
            if self.state() is not None:
                return None
        except StoreError as exc:  # listed, but its files cannot be read
            cause = exc.__cause__ or exc
            return (f"the vector index cannot be read: its files are damaged or missing "
                    f"({engine_message(cause)})")
        ignored = self.ignored()
        if ignored:
            return (f"the vector index {ignored[0].name!r} is unusable: LanceDB does not list it "
                    "(it cannot read its entry), so every search scans all rows; `recallwatch "
                    "ops reindex` builds a new one")
        return None

    def centroids(self) -> np.ndarray | None:
        """The IVF centroids of the live index (Lance exposes them), or None."""
        try:
            arr = self.dataset().centroids(column="vector")
        except (ValueError, RuntimeError, OSError):
            return None
        if arr is None or len(arr) == 0:
            return None
        return vectors_of(arr)

    @guarded
    def fold_new_rows(self) -> None:
        """Add unindexed rows to the live index with its *existing* centroids and codebooks, as
        LanceDB's ``optimize`` does: fast, and the way new topics drift out of reach."""
        self._writable()
        self.dataset().optimize.optimize_indices()

    # -- staged build, verification and atomic switch -----------------------------------------
    @guarded
    def stage_problem(self, ds: lance.LanceDataset | None = None) -> str | None:
        """Why there is no index to rebuild (the table is below its index threshold, or no
        write has built one yet), or None."""
        ds = ds or self.dataset()
        if self._live(ds):
            return None
        rows, threshold = ds.count_rows(), self.store.index_threshold
        state = (f"below index_threshold ({threshold:,}), so every search is exact"
                 if rows < threshold else f"past index_threshold ({threshold:,}), but no "
                 "write has built the index yet")
        return (f"{self.store.uri} has no vector index to rebuild: its {rows:,} rows are "
                f"{state}. The index is built on the write that takes the table past the "
                "threshold, which the store URI sets: ...?table=NAME&index_threshold=N")

    def stage(self) -> tuple[int, Any, VectorStore]:
        """Build a new index on the latest version without publishing it. Returns the version it
        was built on, the unpublished index, and a read-only store view that searches with it
        (a detached version: nobody else sees it)."""
        import lance

        self._writable()
        ds = self.dataset()
        problem = self.stage_problem(ds)
        if problem is not None:
            raise UsageError(problem)
        removed = self._live(ds)  # an index LanceDB ignores is replaced like a live one
        name = removed[0].name
        dim = int(ds.schema.field("vector").type.list_size)
        # The rule every build applies, on today's row count (an index folded by optimize() no
        # longer reports the parameters it was built with).
        params: dict[str, Any] = index_parameters(self.store.index_type, ds.count_rows(), dim)
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
        self._writable()
        return self._swap([staged])

    @guarded
    def republish(self, segments: list[dict[str, Any]], name: str) -> int:
        """Put back an earlier index (rollback) in one commit; returns the new table version.
        The commit is tried on a detached version first: if LanceDB would not list the index
        there, nothing is published."""
        import lance

        self._writable()
        ds = self.dataset()
        current = {f.fragment_id for f in ds.get_fragments()}
        for seg in segments:
            gone = set(seg["fragment_ids"]) - current
            if gone:
                raise StoreError(
                    f"{self.store.uri}: the previous index covers data files that compaction has "
                    f"since rewritten (fragments {sorted(gone)[:5]}); it cannot be restored: run "
                    "`recallwatch ops reindex` instead")
        op = lance.LanceOperation.CreateIndex(new_indices=index_objects(name, segments),
                                              removed_indices=self._live(ds))
        trial = lance.LanceDataset.commit(ds, op, read_version=ds.version, detached=True)
        restored = self.state(trial)
        wanted = {seg["uuid"] for seg in segments}
        if restored is None or set(restored.uuids) != wanted:
            raise StoreError(
                f"{self.store.uri}: LanceDB does not accept the previous index {name!r} "
                f"(segments {', '.join(sorted(wanted))}) back: nothing was changed; run "
                "`recallwatch ops reindex` to build a new one")
        return self._swap(index_objects(name, segments))

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
        return self.ignored() if live is None else index_objects(live.name, live.segments)

    @guarded
    def tag(self, name: str, version: int) -> None:
        """Tag a version so cleanup keeps it (and the index files it names)."""
        from recallwatch.stores.lancedb.table import set_tag

        self._writable()
        set_tag(self.dataset().tags, name, version)

    def _view(self, version: int) -> VectorStore:
        return self.store.view(version)


class StagedLanceIndex:
    """One staged reindex of a LanceStore (a :class:`~recallwatch.stores.base.StagedIndex`): an
    unpublished index, verified through a detached version, published by one commit."""

    def __init__(self, lx: LanceIndex) -> None:
        self.lx = lx
        self.live = lx.state()  # what a rollback puts back
        self._built_on, self.staged, self._candidate = lx.stage()

    @property
    def built_on(self) -> str:
        return str(self._built_on)

    @property
    def candidate(self) -> VectorStore:
        return self._candidate

    def content_check(self) -> str | None:
        return None  # the switch is an index-only commit: the rows are the table's, untouched

    def publish(self) -> PublishedIndex:
        self.lx.tag(PREVIOUS_TAG, self._built_on)
        version = self.lx.publish(self.staged)
        live, new = self.live, self.lx.state()
        uuids = list(new.uuids) if new else []
        # the segments' manifest entries as they are, so a rollback restores exactly this index
        previous = None if live is None else {
            "name": live.name, "segments": list(live.segments), "uuids": list(live.uuids),
            "trained_version": live.trained_version}
        # A CreateIndex commit changes no row: version N holds the data of version N - 1.
        return PublishedIndex(
            version=str(version), content_of=str(version - 1), previous=previous,
            current={"uuids": uuids}, build={"trained_version": self._built_on, "uuids": uuids})

    def abandon(self) -> None:
        pass  # nothing was published; LanceDB's cleanup removes the unpublished files


def restore(lx: LanceIndex, previous: Mapping[str, Any], current: Mapping[str, Any]) -> str:
    """Put back the index ``previous`` names, if the live index is still ``current``."""
    live = lx.state()
    if live is not None and set(live.uuids) != set(current.get("uuids", [])):
        raise StoreError(f"{lx.uri}: the live index is not the one the last reindex built (it "
                         "was rebuilt since); rollback would discard that rebuild")
    return str(lx.republish(previous["segments"], previous["name"]))
