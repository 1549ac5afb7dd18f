"""The VectorStore protocol every adapter implements, and the records it exchanges (a
:class:`~recallwatch.records.Chunk` is defined below the stores and re-exported here).

Scores are similarities: higher is closer (cosine similarity for normalised vectors). An adapter
whose engine returns distances converts them, so the gate's noise rule reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from recallwatch.records import Chunk

__all__ = ["Chunk", "Filter", "Hits", "IndexVersion", "VectorStore"]

# Equality filters on metadata columns: {"domain": "legal"} or {"domain": ["legal", "rrhh"]}.
Filter = Mapping[str, str | Sequence[str]]


@dataclass(frozen=True)
class Hits:
    """The answer to one query: ids in rank order and their similarity scores."""

    ids: list[str]
    scores: np.ndarray  # float32, same length as ids, non-increasing


@dataclass(frozen=True)
class IndexVersion:
    """A version of the store's contents that a run can name and reopen."""

    version: str
    created_at: datetime | None
    production: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    """What the gate, the monitor and the benchmarks need from a vector database."""

    @property
    def uri(self) -> str:
        """The store's URI with any password redacted."""
        ...

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def search(
        self, vectors: np.ndarray, k: int, *, filter: Filter | None = None, exact: bool = False
    ) -> list[Hits]:
        """Top-k per query row. ``exact=True`` bypasses any ANN index (ground truth)."""
        ...

    def score_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]) -> list[dict[str, float]]:
        """For query row i, the score the store gives each chunk in ids[i] (absent ids omitted)."""
        ...

    def get(self, ids: Sequence[str]) -> dict[str, Chunk]: ...

    def chunks(self, *, doc_ids: Sequence[str] | None = None) -> list[Chunk]: ...

    def count(self) -> int: ...

    def versions(self) -> list[IndexVersion]: ...

    def current_version(self) -> str: ...

    def checkout(self, version: str) -> VectorStore:
        """A read-only view of a past version."""
        ...

    def promote(self, version: str) -> None:
        """Mark a version as the one in production."""
        ...

    def production_version(self) -> str | None: ...

    def ids_since(self, version: str) -> list[str]:
        """Ids of chunks added or changed after ``version``."""
        ...

    def get_meta(self, key: str) -> Any:
        """Store-level metadata (embedder fingerprint, ingestion reports); None when unset."""
        ...

    def set_meta(self, key: str, value: Any) -> None: ...

    def close(self) -> None: ...
