"""A sweep over a store's own vectors (``dataset: {store: URI}``) on a real LanceDB table: the
queries sampled from the store are held out of the base for the truth and for the ``store``
engine alike, and the store's ANN parameters (``nprobes``) reach LanceDB."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recallwatch.bench.sweep import load_sweep, run_sweep
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore


def _store(path: Path, n: int, *, index: str = "", clustered: bool = True) -> str:
    """n vectors, clustered or not, deliberately not normalised (the stores rank by cosine)."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(30, 16)) * (3 if clustered else 0)
    vectors = (centres[rng.integers(0, 30, n)] + rng.normal(size=(n, 16))) * rng.uniform(
        0.5, 2.0, size=(n, 1))
    uri = f"lancedb://{path}?table=t{index}"
    LanceStore.open(uri, create=True).upsert([Chunk(id=f"c{i:05d}", text="") for i in range(n)],
                                             vectors.astype(np.float32))
    return uri


def _sweep(tmp_path: Path, dataset_uri: str, engines: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"""\
name: own-data
dataset:
  store: "{dataset_uri}"
  queries: {{sample: 60, seed: 1}}
k: 10
recall_at: [1, 10]
timing: {{warmup: 1}}
load: {{threads: [1], seconds: 0.2}}
engines:
{engines}""", encoding="utf-8")
    return path


def exact_and_flat(uri: str) -> str:
    """The sweep's engines: the store at ``uri`` searched exactly, and faiss's flat index."""
    return f"""\
  - engine: store
    build: {{uri: "{uri}", populate: false}}
    query: {{exact: true}}
  - engine: faiss-flat
"""

def test_exact_search_of_the_store_on_its_own_sampled_queries_has_recall_one(
    tmp_path: Path,
) -> None:
    uri = _store(tmp_path / "kb", 1500)
    config = load_sweep(_sweep(tmp_path, uri, exact_and_flat(uri)))
    result = run_sweep(config)
    assert result.dataset["n"] == 1500 - 60 and result.dataset["metric"] == "cosine"
    store, flat = result.results
    # each query is a row of the store: without holding it out it would find itself first
    assert store.recall == {1: 1.0, 10: 1.0} == flat.recall


def test_nprobes_of_an_ivf_pq_store_reaches_lancedb(tmp_path: Path) -> None:
    params = "&index_type=IVF_PQ&index_threshold=1000&refine_factor=1"
    # no clusters: a query's neighbours spread over many IVF lists, so probing one must miss some
    uri = _store(tmp_path / "kb", 4000, index=params, clustered=False)
    store = LanceStore.open(uri)
    assert store.has_index()
    lists = store.index_parameters(4000, 16)["num_partitions"]
    assert lists >= 8  # enough lists for the number probed to matter
    q = np.ones(16, dtype=np.float32)
    for probes in (1, lists):
        plan = LanceStore.open(f"{uri}&nprobes={probes}").query_plan(q, 10)
        assert f"minimum_nprobes={probes}, maximum_nprobes=Some({probes})" in plan
    assert "ANNIvfPartition" not in store.query_plan(q, 10, exact=True)
    config = load_sweep(_sweep(tmp_path, uri, f"""\
  - engine: store
    build: {{uri: ["{uri}&nprobes=1", "{uri}&nprobes={lists}"], populate: false}}
"""))
    few, every = run_sweep(config).results
    assert few.build["uri"].endswith("nprobes=1") and every.build["uri"].endswith(f"={lists}")
    assert few.recall[10] < every.recall[10]


@pytest.mark.parametrize("populate", [False, True])
def test_a_store_engine_on_a_missing_store(tmp_path: Path, populate: bool) -> None:
    from recallwatch.bench.engines.store_engine import StoreEngine
    from recallwatch.errors import StoreError

    uri = f"lancedb://{tmp_path}/absent?table=t"
    engine = StoreEngine(uri=uri, populate=populate)
    base = np.eye(4, dtype=np.float32)
    if populate:  # writing the base creates the store
        engine.build(base, "ip")
        assert engine.search(base[:1], 1).tolist() == [[0]]
    else:  # reading the store's own data never creates it
        with pytest.raises(StoreError, match="no LanceDB store at"):
            engine.build(base, "ip")
        assert not (tmp_path / "absent").exists()
    engine.close()
