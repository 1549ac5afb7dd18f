"""The manifest records of a LanceDB table's vector index, read and written over pylance's
public API for :mod:`recallwatch.stores.lancedb.index`: a segment's manifest entry as JSON (stored
with a reindex so a rollback restores it exactly, index details included), the ``Index`` records
a commit adds or removes, and the table's commit history followed back to the commit that trained
the live index."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import lance
    from lance.dataset import Index

__all__ = ["bitmap", "history", "index_objects", "main_line", "operation", "segment_entry"]

# Commits looked back through for the records of the live index's segments (one per write).
_LOOKBACK = 1000


def index_objects(name: str, segments: Sequence[dict[str, Any]]) -> list[Any]:
    """``lance.dataset.Index`` records naming index segments (what a commit adds or removes),
    as their manifest entries have them."""
    from lance.dataset import Index

    out = []
    for s in segments:
        details = s.get("index_details")
        created = s.get("created_at")
        out.append(Index(
            uuid=s["uuid"], name=name, fields=list(s["fields"]),
            dataset_version=int(s["dataset_version"]), fragment_ids=bitmap(s["fragment_ids"]),
            index_version=int(s["index_version"]),
            created_at=None if created is None else datetime.fromisoformat(created),
            base_id=s.get("base_id"),
            index_details=None if details is None else (
                str(details[0]), base64.b64decode(details[1]))))
    return out


def segment_entry(desc: Any, seg: Any, record: Index | None) -> dict[str, Any]:
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


def main_line(ds: lance.LanceDataset) -> list[int]:
    """The table's versions up to ``ds``'s, newest first, as far back as :data:`_LOOKBACK`
    commits."""
    up_to = int(ds.version)
    return sorted((v for v in (int(v["version"]) for v in ds.versions()) if v <= up_to),
                  reverse=True)[:_LOOKBACK]


def operation(ds: lance.LanceDataset, version: int) -> Any:
    try:
        tx = ds.read_transaction(version)
    except (ValueError, OSError, RuntimeError):  # cleaned up
        return None
    return None if tx is None else tx.operation


def history(ds: lance.LanceDataset, uuids: Sequence[str], trained_version: int
             ) -> tuple[dict[str, Index], datetime | None]:
    """The commit records of the live segments (their full manifest entries), and when the index
    was trained: the live segments are followed back through the commits that folded segments
    into them (``optimize``, which keeps the version the index was trained on) or remapped them
    (compaction), to the commit that trained it. None when that commit was cleaned up."""
    wanted = set(uuids)
    records: dict[str, Index] = {}
    trained: list[datetime] = []
    for version in main_line(ds):
        if not wanted:
            break
        op = operation(ds, version)
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


def bitmap(ids: list[int]) -> Any:
    from lance.bitmap import Bitmap

    return Bitmap(ids)
