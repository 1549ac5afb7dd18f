"""What every concrete embedder shares: batching, worker processes, a progress bar, float32,
explicit L2 norm.

A model only implements ``_embed_batch(texts, role)``; the checks on what it returns (shape,
finiteness, non-zero rows) live here once, so a broken model or endpoint is caught the same way
whichever it is.

**Batches.** Texts are cut into batches of ``batch_size``. A model that pads each batch to its
longest text (``pads_batches``: e5) gets them grouped by length, so that short texts are not
padded to a long one's length (1.5x on mixed lengths for e5); one that does not (USE's numpy
backend concatenates a batch's tokens) keeps the input order, so its vectors stay exactly those of
consecutive batches. The plan depends only on the texts, never on how many processes run it.

**Worker processes.** An embedder that can be rebuilt in another process (``_worker_options``)
runs its batches on every core: the calling process plus ``workers - 1`` child processes
(:mod:`recallwatch.embedders._workers`). Each batch is the same model call wherever it runs, so the
vectors are identical, bit for bit, to the single-process path. Workers cost a model load each
(about a second), so they are started only once this embedder has embedded ``_WORKERS_AFTER``
texts in calls of several batches (a long ingestion), never for a gate's queries; they then stay
up until :meth:`BatchedEmbedder.close` or the end of the process.
"""

from __future__ import annotations

import os
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from recallwatch._progress import progress, wanted
from recallwatch.errors import EmbedderError, UsageError
from recallwatch.vectors import normalise

__all__ = ["BatchedEmbedder", "Role", "l2_normalise"]

_WORKERS_AFTER = 512  # texts embedded before worker processes are worth their start

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
    pads_batches: ClassVar[bool] = False  # the model pads a batch to its longest text

    def __init__(
        self, *, batch_size: int = 64, progress: bool = False, workers: int | None = None
    ) -> None:
        if batch_size < 1:
            raise UsageError(f"batch_size must be at least 1, found {batch_size}")
        if workers is not None and workers < 1:
            raise UsageError(f"workers must be at least 1, found {workers}")
        self.batch_size = batch_size
        self.progress = progress
        # processes embedding at once, this one included; None: one per core
        self.workers = workers if workers is not None else (os.cpu_count() or 1)
        self._pool: Any = None
        self._embedded = 0

    @abstractmethod
    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        """Raw vectors for one batch, shape (len(texts), dimension)."""

    def _worker_options(self) -> dict[str, Any] | None:
        """Constructor options that rebuild this embedder in a worker process; None (the default)
        when it cannot run in one (a function in memory, a remote endpoint, a torch model that
        threads itself)."""
        return None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "document")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "query")

    def close(self) -> None:
        """Stop the worker processes, if any were started (the end of the process does too)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        if isinstance(texts, str):  # a lone string would be embedded character by character
            raise UsageError("embed_* takes a sequence of texts, found a single str")
        items = list(texts)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise UsageError(f"text {i} is {type(t).__name__}, expected str")
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        plan = self._plan(items)
        label = f"embedding {'queries' if role == 'query' else 'documents'} ({self.name})"
        # on when built so, or when the running command shows progress (a terminal)
        show = (self.progress or wanted()) and len(items) > self.batch_size
        with progress(len(items), label, enabled=show) as advance:
            for n, raw in self._run([[items[i] for i in rows] for rows in plan], role):
                rows = plan[n]
                raw = np.asarray(raw)
                if raw.shape != (len(rows), self.dimension):
                    raise EmbedderError(
                        f"embedder {self.name!r} returned shape {raw.shape} for {len(rows)} "
                        f"texts, expected ({len(rows)}, {self.dimension})"
                    )
                out[rows] = raw
                advance(len(rows))
        self._embedded += len(items)
        return l2_normalise(out, source=f"embedder {self.name!r}") if len(items) else out

    def _plan(self, items: list[str]) -> list[np.ndarray]:
        """The batches, as row numbers: consecutive, or grouped by length for a padding model."""
        order = np.arange(len(items))
        if self.pads_batches and len(items) > self.batch_size:
            lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
            order = np.argsort(lengths, kind="stable")
        return [order[i:i + self.batch_size] for i in range(0, len(items), self.batch_size)]

    def _run(self, batches: list[list[str]], role: Role) -> Iterator[tuple[int, np.ndarray]]:
        pool = self._workers_for(len(batches))
        if pool is None:
            for n, batch in enumerate(batches):
                yield n, self._embed_batch(batch, role)
            return
        yield from pool.run(batches, role, lambda batch: self._embed_batch(batch, role))

    def _workers_for(self, n_batches: int) -> Any:
        """The worker pool, started once a long job shows (None: work in this process)."""
        if n_batches < 2 or self.workers < 2:
            return None
        if self._pool is None:
            options = self._worker_options()
            if options is None or self._embedded < _WORKERS_AFTER:
                return None
            from recallwatch.embedders._workers import WorkerPool

            cls = type(self)
            self._pool = WorkerPool((cls.__module__, cls.__qualname__, options), self.workers - 1)
            weakref.finalize(self, self._pool.close)
        return self._pool

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, version={self.version!r}, "
                f"d={self.dimension})")
