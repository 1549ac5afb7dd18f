"""Chunks as engine rows and back: the one conversion every adapter uses.

A row is what an engine stores beside the vector: the chunk's fields flattened to scalars
(``facets`` as sorted JSON with the acl last, see :mod:`recallwatch.stores.acl`; dates as ISO
strings), plus ``ingested_version`` where the adapter
keeps versions itself. Engines without NULL (Milvus scalar columns, Chroma metadata) store an
absent value as ``""``; reading gives ``None`` back either way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Any, TypeAlias

from recallwatch.stores.acl import acl_from_facets, facets_text
from recallwatch.stores.base import Chunk

__all__ = ["CHUNK_FIELDS", "Row", "chunk_from_row", "row_from_chunk"]

Row: TypeAlias = dict[str, Any]

#: The columns a row holds for a chunk, in table order (before ``ingested_version``).
CHUNK_FIELDS: tuple[str, ...] = (
    "id", "text", "content", "doc_id", "domain", "label", "facets", "valid_from", "valid_to",
    "kind", "description", "content_hash")


def row_from_chunk(chunk: Chunk, version: int | None = None) -> Row:
    """The chunk's row; with ``version``, also its ``ingested_version``."""
    row: Row = {
        "id": chunk.id,
        "text": chunk.text,
        "content": chunk.content,
        "doc_id": chunk.doc_id,
        "domain": chunk.domain,
        "label": chunk.label,
        "facets": facets_text(chunk.facets, chunk.acl),
        "valid_from": chunk.valid_from.isoformat() if chunk.valid_from else None,
        "valid_to": chunk.valid_to.isoformat() if chunk.valid_to else None,
        "kind": chunk.kind,
        "description": chunk.description,
        "content_hash": chunk.content_hash,
    }
    if version is not None:
        row["ingested_version"] = version
    return row


def _as_date(value: Any) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def _or_none(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def chunk_from_row(row: Mapping[str, Any]) -> Chunk:
    raw = row.get("facets") or "{}"
    facets, acl = acl_from_facets(json.loads(raw) if isinstance(raw, str) else dict(raw))
    return Chunk(
        id=str(row["id"]),
        text=str(row.get("text") or ""),
        content=_or_none(row.get("content")),
        doc_id=_or_none(row.get("doc_id")),
        domain=_or_none(row.get("domain")),
        label=_or_none(row.get("label")),
        facets=facets,
        valid_from=_as_date(row.get("valid_from")),
        valid_to=_as_date(row.get("valid_to")),
        kind=str(row.get("kind") or "text"),
        description=_or_none(row.get("description")),
        content_hash=str(row.get("content_hash") or ""),
        acl=acl,
    )
