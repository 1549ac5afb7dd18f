"""Any VectorStore adapter as a benchmark engine: the store answers, the harness times it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from recallwatch.bench.engines.base import Engine, Param, Space
from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.stores.base import VectorStore

__all__ = ["StoreEngine"]


class StoreEngine(Engine):
    name = "store"
    description = "a VectorStore adapter opened by URI (search k, exact or ANN)"
    build_params = (
        Param("uri", str, None, "store URI, e.g. lancedb://./bench?table=vectors"),
        Param("populate", bool, True,
              "upsert the dataset's vectors first (false: the dataset is the store's own export)"),
        Param("batch", int, 5000, "vectors per upsert call", 1, 1_000_000),
    )
    query_params = (Param("exact", bool, False, "bypass the store's ANN index"),)
    is_store = True
    store: VectorStore | None = None

    @classmethod
    def from_store(cls, store: VectorStore, *, populate: bool = False) -> StoreEngine:
        """An engine over an already opened store (the Python API's way in)."""
        engine = cls(uri=store.uri, populate=populate)
        engine.store = store
        return engine

    def build(self, base: np.ndarray, space: Space, ids: Sequence[str] | None = None) -> None:
        from recallwatch.stores.base import Chunk

        if self.store is None:
            if not self.params["uri"]:
                raise UsageError("engine 'store' needs the build parameter 'uri'")
            from recallwatch.stores import open_store

            self.store = open_store(self.params["uri"])
        names = [str(i) for i in range(base.shape[0])] if ids is None else list(ids)
        if self.params["populate"]:
            step = self.params["batch"]
            for start in range(0, len(names), step):
                part = names[start:start + step]
                self.store.upsert([Chunk(id=name, text=name) for name in part],
                                  base[start:start + len(part)])
        self._positions = {name: i for i, name in enumerate(names)}

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        if self.store is None:
            raise UsageError("engine 'store': build() must run before search()")
        hits = self.store.search(queries, k, exact=self.query["exact"])
        out = np.full((len(hits), k), -1, dtype=np.int64)
        get = self._positions.get
        for row, hit in enumerate(hits):
            found = [get(i, -1) for i in hit.ids[:k]]
            out[row, :len(found)] = found
        return out

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
