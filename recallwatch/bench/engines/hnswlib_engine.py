"""hnswlib: the reference HNSW implementation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from recallwatch.bench.engines.base import CANDIDATES, DEGREE, SEED, Engine, Memory, Param, Space

__all__ = ["Hnswlib"]


class Hnswlib(Engine):
    name = "hnswlib"
    description = "hnswlib HNSW graph"
    build_params = (
        Param("M", int, 16, "graph degree", *DEGREE),
        Param("ef_construction", int, 200, "candidate list while building", *CANDIDATES),
        Param("seed", int, 100, "random seed of the level generator", *SEED),
    )
    query_params = (Param("ef", int, 10, "candidate list while searching", *CANDIDATES),)
    index: Any = None

    def build(self, base: np.ndarray, space: Space, ids: Sequence[str] | None = None) -> None:
        import hnswlib

        self.index = hnswlib.Index(space=space, dim=base.shape[1])
        self.index.init_index(max_elements=base.shape[0], M=self.params["M"],
                              ef_construction=self.params["ef_construction"],
                              random_seed=self.params["seed"])
        self.index.set_num_threads(self.threads)
        self.index.add_items(base, np.arange(base.shape[0]))
        self._apply_query()

    def _apply_query(self) -> None:
        if self.index is not None:
            self.index.set_ef(self.query["ef"])

    def set_threads(self, n: int) -> None:
        super().set_threads(n)
        if self.index is not None:
            self.index.set_num_threads(n)

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        labels: np.ndarray = self.index.knn_query(queries, k=k, num_threads=self.threads)[0]
        return labels.astype(np.int64, copy=False)

    def search_one(self, query: np.ndarray, k: int) -> np.ndarray:
        return self.index.knn_query(query, k=k)[0][0]  # type: ignore[no-any-return]

    def memory(self) -> Memory | None:
        return Memory(int(self.index.index_file_size()), "hnswlib index_file_size")

    def close(self) -> None:
        self.index = None
