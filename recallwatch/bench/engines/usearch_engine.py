"""usearch: a compact HNSW with optional f16/i8 storage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from recallwatch.bench.engines.base import CANDIDATES, DEGREE, Engine, Memory, Param, Space

__all__ = ["Usearch"]


class Usearch(Engine):
    name = "usearch"
    description = "usearch HNSW (f32, f16 or i8 storage)"
    build_params = (
        Param("connectivity", int, 16, "graph degree (M)", *DEGREE),
        Param("expansion_add", int, 128, "candidate list while building", *CANDIDATES),
        Param("dtype", str, "f32", "stored scalar type: f32, f16 or i8",
              choices=("f32", "f16", "i8")),
    )
    query_params = (Param("expansion_search", int, 64, "candidate list while searching",
                          *CANDIDATES),)
    index: Any = None

    def build(self, base: np.ndarray, space: Space, ids: Sequence[str] | None = None) -> None:
        from usearch.index import Index

        self.index = Index(ndim=base.shape[1], metric="l2sq" if space == "l2" else "ip",
                           dtype=self.params["dtype"],
                           connectivity=self.params["connectivity"],
                           expansion_add=self.params["expansion_add"])
        self.index.add(np.arange(base.shape[0]), base, threads=self.threads)
        self._apply_query()

    def _apply_query(self) -> None:
        if self.index is not None:
            self.index.expansion_search = self.query["expansion_search"]

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        found = self.index.search(queries, k, threads=self.threads)
        keys: np.ndarray = found.keys.astype(np.int64)
        keys[np.arange(k)[None, :] >= found.counts[:, None]] = -1
        return keys

    def search_one(self, query: np.ndarray, k: int) -> np.ndarray:
        found = self.index.search(query, k, threads=1)
        return found.keys.astype(np.int64)  # type: ignore[no-any-return]

    def memory(self) -> Memory | None:
        return Memory(int(self.index.serialized_length), "usearch serialized_length")

    def close(self) -> None:
        self.index = None
