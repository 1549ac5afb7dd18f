"""``callable``: wrap a Python function ``texts -> vectors`` as an embedder.

For models recallwatch does not ship an adapter for, and for tests. The dimension is read from
one call on a probe text when not given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from recallwatch.embedders._batching import BatchedEmbedder, Role
from recallwatch.errors import EmbedderError

__all__ = ["CallableEmbedder", "EmbedFn"]

EmbedFn = Callable[[Sequence[str]], "np.ndarray | Sequence[Sequence[float]]"]


class CallableEmbedder(BatchedEmbedder):
    def __init__(
        self, fn: EmbedFn, *, query_fn: EmbedFn | None = None, name: str | None = None,
        version: str = "0", dimension: int | None = None, batch_size: int = 64,
        progress: bool = False,
    ) -> None:
        super().__init__(batch_size=batch_size, progress=progress)
        self._fn = fn
        self._query_fn = query_fn or fn
        qualname = getattr(fn, "__qualname__", type(fn).__name__)
        self.name = name or f"callable:{getattr(fn, '__module__', '?')}.{qualname}"
        self.version = version
        if dimension is None:
            probe = np.asarray(fn(["dimension probe"]))
            if probe.ndim != 2 or probe.shape[0] != 1:
                raise EmbedderError(
                    f"{self.name} returned shape {probe.shape} for 1 text, expected (1, d)"
                )
            dimension = int(probe.shape[1])
        self.dimension = dimension

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        fn = self._query_fn if role == "query" else self._fn
        return np.asarray(fn(texts), dtype=np.float32)
