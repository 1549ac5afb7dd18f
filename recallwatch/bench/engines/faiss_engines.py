"""faiss engines: Flat, IVF-Flat, IVF-PQ, HNSW, scalar quantizer (fp16/int8), any factory string,
and binary sign codes in an ``IndexBinaryFlat`` with exact rescoring of the top R."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from recallwatch.bench.engines.base import (
    CANDIDATES,
    CELLS,
    DEGREE,
    Engine,
    Memory,
    Param,
    Space,
    param_problem,
)
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


# Numbers inside a factory string that crash faiss when out of range (HNSW0 aborts, PQ8x0
# divides by zero): (pattern, what, lo, hi).
_FACTORY_NUMBERS = (
    (re.compile(r"HNSW(\d+)"), "HNSW graph degree", *DEGREE),
    (re.compile(r"IVF(\d+)"), "IVF cell count", *CELLS),
    (re.compile(r"PQ(\d+)"), "PQ sub-quantizer count", 1, 1024),
    (re.compile(r"PQ\d+x(\d+)"), "PQ bits per code", 1, 16),
)


def _factory_problem(factory: str) -> str | None:
    for pattern, what, lo, hi in _FACTORY_NUMBERS:
        for match in pattern.finditer(factory):
            digits = match.group(1)
            if len(digits) > 9 or not lo <= int(digits) <= hi:
                return f"a factory string whose {what} is in [{lo}, {hi}]"
    return None


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
        try:
            if not self.index.is_trained:
                self.index.train(base)
            self.index.add(base)
        except RuntimeError as exc:  # too few points for nlist, m not dividing the dimension…
            raise UsageError(f"engine {self.name!r}: faiss cannot build {self.factory()!r} on "
                             f"{base.shape[0]} vectors of dimension {base.shape[1]}: "
                             f"{str(exc).strip().splitlines()[-1]}") from exc
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
    build_params = (Param("nlist", int, 256, "number of k-means cells", *CELLS),)
    query_params = (Param("nprobe", int, 1, "cells visited per query", *CELLS),)

    def factory(self) -> str:
        return f"IVF{self.params['nlist']},Flat"


class FaissIVFPQ(_Faiss):
    name = "faiss-ivfpq"
    description = "IVF cells with product-quantised codes (IVF-PQ)"
    build_params = (
        Param("nlist", int, 256, "number of k-means cells", *CELLS),
        Param("m", int, 16, "sub-quantizers (must divide the dimension)", 1, 1024),
        Param("nbits", int, 8, "bits per sub-quantizer code", 1, 16),
    )
    query_params = (Param("nprobe", int, 1, "cells visited per query", *CELLS),)

    def factory(self) -> str:
        return f"IVF{self.params['nlist']},PQ{self.params['m']}x{self.params['nbits']}"


class FaissHNSW(_Faiss):
    name = "faiss-hnsw"
    description = "HNSW graph over full vectors"
    build_params = (
        Param("M", int, 32, "graph degree", *DEGREE),
        Param("efConstruction", int, 40, "candidate list while building", *CANDIDATES),
    )
    query_params = (Param("efSearch", int, 16, "candidate list while searching", *CANDIDATES),)

    def factory(self) -> str:
        return f"HNSW{self.params['M']},Flat"

    def _before_add(self) -> None:
        self.index.hnsw.efConstruction = self.params["efConstruction"]


class FaissSQ(_Faiss):
    name = "faiss-sq"
    description = ("flat scan over scalar-quantised vectors (fp16, or int8 with "
                   "per-dimension ranges)")
    build_params = (Param("type", str, "int8", "fp16 or int8", choices=("fp16", "int8")),)
    _CODES: ClassVar[dict[str, str]] = {"fp16": "SQfp16", "int8": "SQ8"}

    def factory(self) -> str:
        return self._CODES[self.params["type"]]


class FaissFactory(_Faiss):
    name = "faiss"
    description = "any faiss index_factory string; query parameters as faiss ParameterSpace names"
    build_params = (Param("factory", str, "Flat", "e.g. 'IVF1024,PQ32' or 'OPQ16,IVF256,SQ8'",
                          check=_factory_problem),)
    # faiss validates the names itself (ParameterSpace raises on an unknown one); the values
    # are checked here (nprobe 0 fails inside search)
    open_query_param = Param("value", float, 1, "a ParameterSpace value", 1, CELLS[1])

    def factory(self) -> str:
        return str(self.params["factory"])

    def set_query_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        bad = param_problem((), params, open_param=self.open_query_param)
        if bad is not None:
            raise UsageError(f"engine {self.name!r}: query parameter {bad[0]!r} expects "
                             f"{bad[1]}, found {bad[2]!r}")
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
    query_params = (Param("R", int, 0, "candidates rescored exactly (0: Hamming order alone)",
                          0, CELLS[1]),)

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
