"""What every concrete embedder shares: batching, a progress bar, float32, explicit L2 norm.

A model only implements ``_embed_batch(texts, role)``; the checks on what it returns (shape,
finiteness, non-zero rows) live here once, so a broken model or endpoint is caught the same way
whichever it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal

import numpy as np

from recallwatch._progress import progress
from recallwatch.errors import EmbedderError, UsageError
from recallwatch.vectors import normalise

__all__ = ["BatchedEmbedder", "Role", "l2_normalise"]

Role = Literal["query", "document"]


def l2_normalise(vectors: np.ndarray, *, source: str) -> np.ndarray:
    """Rows scaled to unit length, float32. A zero or non-finite row is an error, not a NaN."""
    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise EmbedderError(f"{source} returned an array of shape {out.shape}, expected (n, d)")
    finite = np.isfinite(out).all(axis=1)
    if not finite.all():
        raise EmbedderError(f"{source} returned non-finite values in row {int(np.argmin(finite))}")
    zero = ~out.any(axis=1)
    if zero.any():
        raise EmbedderError(f"{source} returned an all-zero vector in row {int(np.argmax(zero))}")
    return normalise(out)


class BatchedEmbedder(ABC):
    """Base of the shipped embedders. Subclasses set name, version, dimension."""

    name: str
    version: str
    dimension: int

    def __init__(self, *, batch_size: int = 64, progress: bool = False) -> None:
        if batch_size < 1:
            raise UsageError(f"batch_size must be at least 1, found {batch_size}")
        self.batch_size = batch_size
        self.progress = progress

    @abstractmethod
    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        """Raw vectors for one batch, shape (len(texts), dimension)."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "document")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "query")

    def _embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        if isinstance(texts, str):  # a lone string would be embedded character by character
            raise UsageError("embed_* takes a sequence of texts, found a single str")
        items = list(texts)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise UsageError(f"text {i} is {type(t).__name__}, expected str")
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        label = f"embedding {role}s ({self.name})"
        show = self.progress and len(items) > self.batch_size
        with progress(len(items), label, enabled=show) as advance:
            for start in range(0, len(items), self.batch_size):
                batch = items[start:start + self.batch_size]
                raw = np.asarray(self._embed_batch(batch, role))
                if raw.shape != (len(batch), self.dimension):
                    raise EmbedderError(
                        f"embedder {self.name!r} returned shape {raw.shape} for {len(batch)} "
                        f"texts, expected ({len(batch)}, {self.dimension})"
                    )
                out[start:start + len(batch)] = raw
                advance(len(batch))
        return l2_normalise(out, source=f"embedder {self.name!r}") if len(items) else out

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, version={self.version!r}, "
                f"d={self.dimension})")
