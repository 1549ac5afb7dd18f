from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from recallwatch.bench.datasets import Dataset
from recallwatch.bench.engines import ENGINES, make_engine
from recallwatch.bench.engines.store_engine import StoreEngine
from recallwatch.bench.exact_knn import ground_truth, id_recall
from recallwatch.bench.measure import load_test
from recallwatch.errors import UsageError
from recallwatch.stores.base import Chunk, Hits

# engine, build parameters, query parameters generous enough to be (nearly) exact
GENEROUS: list[tuple[str, dict[str, Any], dict[str, Any], float]] = [
    ("faiss-flat", {}, {}, 1.0),
    ("faiss-ivf", {"nlist": 16}, {"nprobe": 16}, 1.0),
    # faiss 1.15 trains PQ codebooks slowly on a busy machine (tens of seconds): see the slow test
    ("faiss-hnsw", {"M": 16, "efConstruction": 100}, {"efSearch": 256}, 0.99),
    ("faiss-sq", {"type": "fp16"}, {}, 0.99),
    ("faiss-sq", {"type": "int8"}, {}, 0.9),
    ("faiss-binary", {}, {"R": 3000}, 1.0),
    ("faiss", {"factory": "IVF16,Flat"}, {"nprobe": 16}, 1.0),
    ("hnswlib", {"M": 16, "ef_construction": 100}, {"ef": 256}, 0.99),
    ("usearch", {"connectivity": 16}, {"expansion_search": 256}, 0.99),
]


@pytest.mark.parametrize(("name", "build", "query", "floor"), GENEROUS,
                         ids=[f"{g[0]}-{i}" for i, g in enumerate(GENEROUS)])
def test_engine_finds_the_exact_neighbours_when_generous(
    small: Dataset, name: str, build: dict[str, Any], query: dict[str, Any], floor: float
) -> None:
    truth = ground_truth(small.base, small.queries, 10, "ip")
    engine = make_engine(name, **build)
    engine.build(small.base, "ip")
    engine.set_query_params(query)
    found = engine.search(small.queries, 10)
    assert found.shape == (len(small.queries), 10)
    assert id_recall(found, truth.ids, 10).mean() >= floor
    one = engine.search_one(small.queries[0], 10)
    assert set(one.tolist()) == set(found[0].tolist())
    memory = engine.memory()
    assert memory is not None and memory.bytes > 0 and memory.how
    engine.close()


@pytest.mark.slow
def test_ivfpq_finds_neighbours_well_above_chance(small: Dataset) -> None:
    truth = ground_truth(small.base, small.queries, 10, "ip")
    engine = make_engine("faiss-ivfpq", nlist=8, m=16, nbits=4)
    engine.build(small.base, "ip")
    recalls = []
    for nprobe in (1, 8):
        engine.set_query_params({"nprobe": nprobe})
        recalls.append(id_recall(engine.search(small.queries, 10), truth.ids, 10).mean())
    # coarse 4-bit codes cap recall; visiting every cell must help, and beat chance (10/3000)
    assert recalls[1] >= recalls[0] and recalls[1] > 0.2


def test_a_stingy_query_setting_loses_recall(small: Dataset) -> None:
    truth = ground_truth(small.base, small.queries, 10, "ip")
    engine = make_engine("faiss-ivf", nlist=64)
    engine.build(small.base, "ip")
    recalls = []
    for nprobe in (1, 64):
        engine.set_query_params({"nprobe": nprobe})
        recalls.append(id_recall(engine.search(small.queries, 10), truth.ids, 10).mean())
    assert recalls[0] < recalls[1] == 1.0


def test_unknown_engine_lists_the_valid_names() -> None:
    with pytest.raises(UsageError, match=r"unknown engine 'hnsw' .*valid: faiss, faiss-binary"):
        make_engine("hnsw")


def test_unknown_or_mistyped_parameters_are_refused() -> None:
    with pytest.raises(UsageError, match=r"'hnswlib': unknown build parameter 'ef'; valid: M, "):
        make_engine("hnswlib", ef=10)
    engine = make_engine("faiss-ivf")
    with pytest.raises(UsageError, match=r"query parameter 'nprobe' expects an integer in "
                                         r"\[1, 1000000\], found '8'"):
        engine.set_query_params({"nprobe": "8"})


def test_every_engine_is_documented() -> None:
    assert all(entry.description and entry.extra == "bench" for entry in ENGINES.entries())


class MemoryStore:
    """A minimal in-memory VectorStore (inner-product scores), standing in for an adapter."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.vecs = np.zeros((0, 0), np.float32)

    @property
    def uri(self) -> str:
        return "memory://test"

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        self.ids += [c.id for c in chunks]
        self.vecs = vectors.copy() if not self.vecs.size else np.vstack([self.vecs, vectors])

    def search(self, vectors: np.ndarray, k: int, *, filter: Any = None, exact: bool = False
               ) -> list[Hits]:
        scores = vectors @ self.vecs.T
        top = np.argsort(-scores, axis=1)[:, :k]
        return [Hits([self.ids[i] for i in row], s[row]) for row, s in zip(top, scores,
                                                                            strict=True)]

    def chunks(self, *, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        return [Chunk(id=i, text=i) for i in self.ids]

    def count(self) -> int:
        return len(self.ids)

    def score_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]
                 ) -> list[dict[str, float]]:
        pos = {name: j for j, name in enumerate(self.ids)}
        return [{i: float(self.vecs[pos[i]] @ v) for i in row} for v, row in zip(vectors, ids,
                                                                                  strict=True)]

    def close(self) -> None:
        pass


def test_store_engine_runs_a_vector_store_and_its_load_test(small: Dataset) -> None:
    truth = ground_truth(small.base, small.queries, 10, "ip")
    engine = StoreEngine.from_store(MemoryStore(), populate=True)  # type: ignore[arg-type]
    engine.build(small.base, "ip")
    engine.set_query_params({"exact": True})
    assert id_recall(engine.search(small.queries, 10), truth.ids, 10).mean() == 1.0
    point = load_test(engine, small.queries, 10, threads=2, seconds=0.3)
    assert point.threads == 2 and point.queries > 0 and point.errors == 0
    assert point.qps > 0 and point.p99_ms >= point.p50_ms > 0


def test_export_vectors_reads_a_store_back_through_the_protocol(small: Dataset) -> None:
    from recallwatch.bench.datasets import export_vectors

    store = MemoryStore()
    store.upsert([Chunk(id=f"c{i}", text="") for i in range(50)], small.base[:50])
    ids, vectors = export_vectors(store, dim=small.base.shape[1])  # type: ignore[arg-type]
    assert ids == [f"c{i}" for i in range(50)]
    np.testing.assert_allclose(vectors, small.base[:50], atol=1e-6)
