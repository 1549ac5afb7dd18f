"""Embedding models, found by name through one registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recallwatch._registry import Registry

if TYPE_CHECKING:
    from recallwatch.embedders.base import Embedder

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "get_embedder"]

DEFAULT_EMBEDDER = "use-multilingual"

# name -> "module:factory(**options) -> Embedder"
EMBEDDERS: Registry[object] = Registry("embedder")
EMBEDDERS.register(DEFAULT_EMBEDDER, "recallwatch.embedders.use:USEEmbedder",
                   description="Universal Sentence Encoder multilingual v3, 512-d, numpy only")


def get_embedder(name: str = DEFAULT_EMBEDDER, **options: Any) -> Embedder:
    factory = EMBEDDERS.get(name)
    embedder: Embedder = factory(**options)  # type: ignore[operator]
    return embedder
