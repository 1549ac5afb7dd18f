"""Any VectorStore adapter as a benchmark engine: the store answers, the harness times it.

The store may hold rows outside the benchmarked base: the queries a ``store:`` dataset sampled
from the store's own vectors (held out of the base, so the truth cannot contain them), or rows the
dataset does not name. The engine searches past them — a little deeper, and once more at full
depth for an answer that still lacks k base rows — so it is measured on the same base as the
truth; otherwise each query would find itself first and every recall would be understated.
"""

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

            # populating writes, so it may create the store; reading the store's own data must not
            self.store = open_store(self.params["uri"], create=self.params["populate"])
        names = [str(i) for i in range(base.shape[0])] if ids is None else list(ids)
        if self.params["populate"]:
            step = self.params["batch"]
            for start in range(0, len(names), step):
                part = names[start:start + step]
                self.store.upsert([Chunk(id=name, text=name) for name in part],
                                  base[start:start + len(part)])
        self._positions = {name: i for i, name in enumerate(names)}
        self._outside = max(0, self.store.count() - len(names))  # rows not in the base

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        if self.store is None:
            raise UsageError("engine 'store': build() must run before search()")
        exact = self.query["exact"]
        # first pass: k more rows than asked (a held-out share beyond 50 % is unusual) ...
        depth = k + min(self._outside, k)
        hits = self.store.search(queries, depth, exact=exact)
        out = np.full((len(hits), k), -1, dtype=np.int64)
        get = self._positions.get
        short = []
        for row, hit in enumerate(hits):
            found = [p for p in (get(i, -1) for i in hit.ids) if p >= 0][:k]
            out[row, :len(found)] = found
            if len(found) < k and len(hit.ids) == depth and depth < k + self._outside:
                short.append(row)
        # ... then, for an answer with fewer than k base rows, deep enough to pass every outsider
        if short:
            again = self.store.search(queries[short], k + self._outside, exact=exact)
            for row, hit in zip(short, again, strict=True):
                found = [p for p in (get(i, -1) for i in hit.ids) if p >= 0][:k]
                out[row, :len(found)] = found
        return out

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
