"""faiss engines: Flat, IVF-Flat, IVF-PQ, HNSW, scalar quantizer (fp16/int8), any factory string,
and binary sign codes in an ``IndexBinaryFlat`` with exact rescoring of the top R."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from recallwatch.bench.engines.base import Engine, Memory, Param, Space
from recallwatch.errors import UsageError

__all__ = [
    "FaissBinary",
    "FaissFactory",
    "FaissFlat",
    "FaissHNSW",
    "FaissIVF",
    "FaissIVFPQ",
    "FaissSQ",
]


def _faiss() -> Any:
    import faiss

    return faiss


class _Faiss(Engine):
    """An index built from a faiss factory string; query parameters go through ParameterSpace."""

    index: Any = None

    def factory(self) -> str:
        raise NotImplementedError

    def build(self, base: np.ndarray, space: Space, ids: Sequence[str] | None = None) -> None:
        faiss = _faiss()
        metric = faiss.METRIC_L2 if space == "l2" else faiss.METRIC_INNER_PRODUCT
        try:
            self.index = faiss.index_factory(base.shape[1], self.factory(), metric)
        except RuntimeError as exc:
            raise UsageError(f"engine {self.name!r}: faiss rejects {self.factory()!r}: "
                             f"{str(exc).strip().splitlines()[-1]}") from exc
        self._before_add()
        if not self.index.is_trained:
            self.index.train(base)
        self.index.add(base)
        self._apply_query()

    def _before_add(self) -> None:
        """Build-time knobs that must be set on the empty index."""

    def _apply_query(self) -> None:
        if self.index is None:
            return
        space = _faiss().ParameterSpace()
        for name, value in self.query.items():
            space.set_index_parameter(self.index, name, value)

    def set_threads(self, n: int) -> None:
        super().set_threads(n)
        _faiss().omp_set_num_threads(n)

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        return np.asarray(self.index.search(queries, k)[1])

    def search_one(self, query: np.ndarray, k: int) -> np.ndarray:
        return np.asarray(self.index.search(query[None, :], k)[1][0])

    def memory(self) -> Memory | None:
        return Memory(int(_faiss().serialize_index(self.index).size), "faiss serialize_index")

    def close(self) -> None:
        self.index = None


class FaissFlat(_Faiss):
    name = "faiss-flat"
    description = "exact brute force (IndexFlat)"

    def factory(self) -> str:
        return "Flat"


class FaissIVF(_Faiss):
    name = "faiss-ivf"
    description = "inverted lists over k-means cells, full vectors (IVF-Flat)"
    build_params = (Param("nlist", int, 256, "number of k-means cells"),)
    query_params = (Param("nprobe", int, 1, "cells visited per query"),)

    def factory(self) -> str:
        return f"IVF{self.params['nlist']},Flat"


class FaissIVFPQ(_Faiss):
    name = "faiss-ivfpq"
    description = "IVF cells with product-quantised codes (IVF-PQ)"
    build_params = (
        Param("nlist", int, 256, "number of k-means cells"),
        Param("m", int, 16, "sub-quantizers (must divide the dimension)"),
        Param("nbits", int, 8, "bits per sub-quantizer code"),
    )
    query_params = (Param("nprobe", int, 1, "cells visited per query"),)

    def factory(self) -> str:
        return f"IVF{self.params['nlist']},PQ{self.params['m']}x{self.params['nbits']}"


class FaissHNSW(_Faiss):
    name = "faiss-hnsw"
    description = "HNSW graph over full vectors"
    build_params = (
        Param("M", int, 32, "graph degree"),
        Param("efConstruction", int, 40, "candidate list while building"),
    )
    query_params = (Param("efSearch", int, 16, "candidate list while searching"),)

    def factory(self) -> str:
        return f"HNSW{self.params['M']},Flat"

    def _before_add(self) -> None:
        self.index.hnsw.efConstruction = self.params["efConstruction"]


class FaissSQ(_Faiss):
    name = "faiss-sq"
    description = ("flat scan over scalar-quantised vectors (fp16, or int8 with "
                   "per-dimension ranges)")
    build_params = (Param("type", str, "int8", "fp16 or int8"),)
    _CODES: ClassVar[dict[str, str]] = {"fp16": "SQfp16", "int8": "SQ8"}

    def factory(self) -> str:
        code = self._CODES.get(self.params["type"])
        if code is None:
            raise UsageError(f"engine {self.name!r}: build parameter 'type' expects fp16 or int8, "
                             f"found {self.params['type']!r}")
        return code


class FaissFactory(_Faiss):
    name = "faiss"
    description = "any faiss index_factory string; query parameters as faiss ParameterSpace names"
    build_params = (Param("factory", str, "Flat", "e.g. 'IVF1024,PQ32' or 'OPQ16,IVF256,SQ8'"),)

    def factory(self) -> str:
        return str(self.params["factory"])

    def set_query_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        # faiss validates the names itself (ParameterSpace raises on an unknown one)
        self.query = dict(params)
        try:
            self._apply_query()
        except RuntimeError as exc:
            raise UsageError(f"engine {self.name!r}: faiss rejects query parameters "
                             f"{dict(params)!r}: {str(exc).strip().splitlines()[-1]}") from exc
        return dict(self.query)


class FaissBinary(Engine):
    name = "faiss-binary"
    description = "sign bits in IndexBinaryFlat (Hamming), then exact rescoring of the top R"
    query_params = (Param("R", int, 0, "candidates rescored exactly (0: Hamming order alone)"),)

    def build(self, base: np.ndarray, space: Space, ids: Sequence[str] | None = None) -> None:
        from recallwatch.bench.quantize import BinaryIndex

        self.binary = BinaryIndex(base, space)

    def set_threads(self, n: int) -> None:
        super().set_threads(n)
        _faiss().omp_set_num_threads(n)

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        return self.binary.search(queries, k, self.query["R"])

    def memory(self) -> Memory | None:
        return Memory(self.binary.code_bytes(),
                      "faiss serialize_index_binary (float vectors kept for rescoring not counted)")

    def close(self) -> None:
        del self.binary
