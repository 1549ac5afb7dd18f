"""The record every layer exchanges: a knowledge-base chunk, its corpus record and its content hash.

It sits below both the corpus format (which reads chunks from files) and the stores (which hold
them), so neither depends on the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from recallwatch._hashing import canonical_hash

__all__ = ["FILTER_FIELDS", "OPTIONAL_TEXT_FIELDS", "Chunk", "chunk_to_record", "content_hash"]

# The chunk fields a search can filter on by equality (a policy's search.filter, every store).
FILTER_FIELDS: tuple[str, ...] = ("doc_id", "domain", "label", "kind")

# The optional text fields of a chunk, in the order a corpus record lists them.
OPTIONAL_TEXT_FIELDS: tuple[str, ...] = ("content", "doc_id", "domain", "label", "description")


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of a knowledge base (the corpus format's record)."""

    id: str
    text: str  # the representation field: what is embedded and searched
    content: str | None = None  # the raw content shown to a reader
    doc_id: str | None = None
    domain: str | None = None
    label: str | None = None  # e.g. SINTESIS_CURADA marks a Gold chunk
    facets: Mapping[str, str] = field(default_factory=dict)
    valid_from: date | None = None
    valid_to: date | None = None
    kind: str = "text"  # text, table, …
    description: str | None = None
    content_hash: str = ""


def chunk_to_record(chunk: Chunk) -> dict[str, Any]:
    """The corpus record of a chunk (optional fields left out when empty); inverse of the reader."""
    out: dict[str, Any] = {"id": chunk.id, "text": chunk.text}
    for name in OPTIONAL_TEXT_FIELDS:
        value = getattr(chunk, name)
        if value is not None:
            out[name] = value
    if chunk.facets:
        out["facets"] = dict(chunk.facets)
    if chunk.valid_from is not None:
        out["valid_from"] = chunk.valid_from.isoformat()
    if chunk.valid_to is not None:
        out["valid_to"] = chunk.valid_to.isoformat()
    if chunk.kind != "text":
        out["kind"] = chunk.kind
    return out


def content_hash(chunk: Chunk) -> str:
    """sha256 over every field of the chunk except the hash itself (canonical JSON)."""
    return canonical_hash(chunk_to_record(chunk))
