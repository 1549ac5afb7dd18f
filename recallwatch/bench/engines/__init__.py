"""Benchmark engines, found by name through one registry.

Each entry names the ``bench`` extra; the engine's library is imported on first use.
"""

from __future__ import annotations

from typing import Any

from recallwatch._registry import Registry
from recallwatch.bench.engines.base import Engine, Memory, Param, Space

__all__ = ["ENGINES", "Engine", "Memory", "Param", "Space", "make_engine"]

ENGINES: Registry[type[Engine]] = Registry("engine")
for _name, _target, _doc in [
    ("faiss-flat", "faiss_engines:FaissFlat", "exact brute force (faiss IndexFlat)"),
    ("faiss-ivf", "faiss_engines:FaissIVF", "faiss IVF-Flat; build nlist, query nprobe"),
    ("faiss-ivfpq", "faiss_engines:FaissIVFPQ", "faiss IVF-PQ; build nlist, m, nbits;"
     " query nprobe"),
    ("faiss-hnsw", "faiss_engines:FaissHNSW", "faiss HNSW; build M, efConstruction;"
     " query efSearch"),
    ("faiss-sq", "faiss_engines:FaissSQ", "faiss scalar quantizer; build type fp16|int8"),
    ("faiss-binary", "faiss_engines:FaissBinary",
     "sign codes in IndexBinaryFlat + exact rescoring; query R"),
    ("faiss", "faiss_engines:FaissFactory", "any faiss factory string; ParameterSpace query names"),
    ("hnswlib", "hnswlib_engine:Hnswlib", "hnswlib; build M, ef_construction; query ef"),
    ("usearch", "usearch_engine:Usearch",
     "usearch; build connectivity, expansion_add, dtype; query expansion_search"),
    ("store", "store_engine:StoreEngine", "any VectorStore adapter; build uri; query exact"),
]:
    ENGINES.register(_name, f"recallwatch.bench.engines.{_target}", extra="bench", description=_doc)


def make_engine(name: str, **build_params: Any) -> Engine:
    """A fresh engine by registry name, with its build parameters checked."""
    return ENGINES.get(name)(**build_params)
