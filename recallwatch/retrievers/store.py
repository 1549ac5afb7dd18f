"""A vector store as a retriever: queries embedded with the embedder that built the index (or the
one named), then searched as the gate searches it
(``recallwatch.acceptance.retrieve.StoreSource``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallwatch.embedders.base import Embedder, fingerprint_of
from recallwatch.records import Chunk
from recallwatch.retrievers.base import Hit
from recallwatch.stores.base import Filter, VectorStore

__all__ = ["StoreRetriever", "open_store_retriever"]


@dataclass
class StoreRetriever:
    store: VectorStore
    embedder: Embedder
    name: str = "dense"
    filter: Filter | None = None
    owned: bool = False  # opened from a URI here: close() closes the store

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        vectors = np.asarray(self.embedder.embed_queries(list(queries)), dtype=np.float32)
        return [list(zip(h.ids, (float(s) for s in h.scores)))
                for h in self.store.search(vectors, k, filter=self.filter or None)]

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        return self.store.get(list(ids))

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        return self.store.chunks(doc_ids=list(doc_ids)) if doc_ids else []

    def describe(self) -> dict[str, Any]:
        return {"kind": "store", "uri": self.store.uri, "version": self.store.current_version(),
                "embedder": fingerprint_of(self.embedder).to_dict()}

    def close(self) -> None:
        if self.owned:
            self.store.close()


def open_store_retriever(uri: str, *, name: str = "dense",
                         embedder: str | None = None) -> StoreRetriever:
    """The store a URI names, queried with ``embedder`` (a spec) or the one that built it."""
    from recallwatch.embedders import embedder_for_store
    from recallwatch.stores import open_store

    store = open_store(uri)
    try:
        chosen = embedder_for_store(store, embedder)
    except BaseException:
        store.close()
        raise
    return StoreRetriever(store, chosen, name, owned=True)
