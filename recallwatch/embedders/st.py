"""``sentence-transformers``: any SentenceTransformer model from a local directory (extra ``st``).

Only a local path is accepted and the library is told not to reach a hub: nothing downloads at run
time. Models trained with instructions take them as ``query_prefix`` / ``document_prefix``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import sentence_transformers

from recallwatch.embedders._batching import BatchedEmbedder, Role
from recallwatch.embedders.base import EmbeddingTokens
from recallwatch.errors import UsageError

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder(BatchedEmbedder):
    def __init__(
        self, path: str, *, query_prefix: str = "", document_prefix: str = "",
        device: str = "cpu", batch_size: int = 32, progress: bool = False,
    ) -> None:
        super().__init__(batch_size=batch_size, progress=progress)
        model_dir = Path(path).expanduser()
        if not model_dir.is_dir():
            raise UsageError(
                f"sentence-transformers model path {path!r} is not a local directory "
                "(models are never downloaded: save one with model.save(PATH) first)"
            )
        self._model = sentence_transformers.SentenceTransformer(
            str(model_dir), device=device, local_files_only=True
        )
        # sentence-transformers 6 renamed the method (the old name warns); accept both.
        dimension_of = getattr(self._model, "get_embedding_dimension", None) \
            or self._model.get_sentence_embedding_dimension
        dim = dimension_of()
        if dim is None:
            raise UsageError(f"the model at {path!r} does not declare its embedding dimension")
        self.dimension = int(dim)
        self.name = f"sentence-transformers:{model_dir.resolve().name}"
        self.version = str(sentence_transformers.__version__)
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        prefix = self.query_prefix if role == "query" else self.document_prefix
        out = self._model.encode(
            [prefix + t for t in texts], batch_size=self.batch_size, convert_to_numpy=True,
            normalize_embeddings=False, show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    def count_tokens(self, texts: Sequence[str]) -> EmbeddingTokens:
        """The tokens the model reads for ``texts`` embedded as queries (their prefix and
        special tokens included, cut at the model's maximum length as it cuts them), counted
        by the model's own tokenizer."""
        items = [self.query_prefix + t for t in texts]
        ids = self._model.tokenizer(items, truncation=True,
                                    max_length=self._model.max_seq_length)["input_ids"]
        return EmbeddingTokens(len(items), sum(len(i) for i in ids), 0,
                               "its own tokenizer (sentence-transformers)", hosted=False)
