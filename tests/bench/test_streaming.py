"""``bench streaming`` on LanceDB and pgvector: rows inserted in batches by a second handle while
queries run; after each batch, recall against numpy brute force over the rows inserted so far."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from recallwatch.bench.datasets import Dataset, synthetic
from recallwatch.bench.live import open_empty
from recallwatch.bench.streaming import StreamResult, run_streaming
from recallwatch.errors import UsageError
from recallwatch.stores.base import VectorStore
from tests.pg import PostgresServer

from .brute import answers, numpy_recall

_names = itertools.count()


@pytest.fixture(scope="module")
def data() -> Dataset:
    return synthetic(2000, 16, topics=10, queries=20, seed=9)


def _stream(uri: str, data: Dataset, stores: list[VectorStore], *, initial: int,
            batch: int) -> StreamResult:
    store = open_empty(uri)
    stores.append(store)
    return run_streaming(uri, store, data, 10, initial=initial, batch=batch)


def _check(result: StreamResult, store: VectorStore, data: Dataset,
           rows: list[int]) -> None:
    """The steps hold the rows asked for, each step's recall is that of its answers against
    numpy brute force over the rows inserted by then, and the store ends with every row."""
    assert [s.rows for s in result.steps] == rows
    assert [s.batch for s in result.steps] == list(range(len(rows)))
    for step in result.steps:
        assert step.found.max() < step.rows  # no answer names a row not inserted yet
        assert step.recall == pytest.approx(
            numpy_recall(step.found, data, np.arange(step.rows), 10))
    assert store.count() == len(data.base)
    final = answers(store, data.queries, 10)
    assert result.to_dict()["after_stream"]["rows"] == len(data.base)
    assert numpy_recall(final, data, np.arange(len(data.base)), 10) > 0.5


def test_lancedb_exact_stream_has_full_recall_at_every_step(
        tmp_path: Path, data: Dataset, stores: list[VectorStore]) -> None:
    # below index_threshold every search is exact: recall 1 after each batch only if the
    # truth is taken over the rows inserted so far (over all rows it would be lower early on)
    result = _stream(f"lancedb://{tmp_path / 'db'}?table=t", data, stores,
                     initial=500, batch=500)
    _check(result, stores[0], data, [500, 1000, 1500, 2000])
    assert all(s.recall == 1.0 for s in result.steps)
    assert result.steps[0].during.queries == 0  # the first load is not searched meanwhile


def test_lancedb_stream_past_its_index(tmp_path: Path, data: Dataset,
                                       stores: list[VectorStore]) -> None:
    # the first 1000 rows build the ANN index; later rows stay outside it, searched exactly
    result = _stream(f"lancedb://{tmp_path / 'db'}?table=t&index_threshold=1000", data, stores,
                     initial=1000, batch=400)
    _check(result, stores[0], data, [1000, 1400, 1800, 2000])


def test_pgvector_stream_into_its_hnsw_graph(
        postgres_server: PostgresServer, pg_env: None, data: Dataset,
        stores: list[VectorStore]) -> None:
    # batches under 1000 rows go into the HNSW graph row by row
    result = _stream(postgres_server.uri(f"str{next(_names)}"), data, stores,
                     initial=1200, batch=400)
    _check(result, stores[0], data, [1200, 1600, 2000])


def test_bad_stream_sizes_are_usage_errors(tmp_path: Path, data: Dataset,
                                           stores: list[VectorStore]) -> None:
    with pytest.raises(UsageError, match="first load"):
        _stream(f"lancedb://{tmp_path / 'a'}?table=t", data, stores, initial=0, batch=10)
    with pytest.raises(UsageError, match="batch"):
        _stream(f"lancedb://{tmp_path / 'b'}?table=t", data, stores, initial=10, batch=0)
