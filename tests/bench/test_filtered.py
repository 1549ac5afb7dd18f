"""``bench filtered`` on real stores with their own filters: the selectivity tags, recall checked
against numpy brute force over the rows that pass each filter, and pgvector's two ways of
filtering an HNSW search (iterative scan, post-filter)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from recallwatch.bench.datasets import Dataset, synthetic
from recallwatch.bench.filtered import (
    FilteredResult,
    run_filtered,
    selectivity_tags,
    tag_filter,
)
from recallwatch.bench.live import open_empty
from recallwatch.errors import UsageError
from recallwatch.stores.base import SupportsIndexSize, VectorStore
from tests.pg import PostgresServer

from .brute import answers, numpy_recall

_names = itertools.count()


@pytest.fixture(scope="module")
def data() -> Dataset:
    return synthetic(3000, 16, topics=10, queries=25, seed=3)


def _run(uri: str, data: Dataset, stores: list[VectorStore], k: int = 10) -> FilteredResult:
    store = open_empty(uri)
    stores.append(store)
    return run_filtered(store, data, k, seed=5)


def _check_against_numpy(result: FilteredResult, store: VectorStore, data: Dataset,
                         k: int = 10) -> None:
    """Each row's recall equals the recall of the answers the store gave against numpy brute
    force over the rows that pass the filter, and no answer holds a row outside; asked again
    (the same ANN search, the same filter), the store keeps its filter too."""
    tags = np.asarray(selectivity_tags(len(data.base), (0.01, 0.10, 0.50), seed=5))
    for j, row in enumerate(result.rows):
        passing = np.arange(len(data.base)) if j == 0 else np.flatnonzero(
            np.isin(tags, [f"p{i + 1}" for i in range(j)]))
        assert row.rows_passing == len(passing)
        assert row.found.shape == (len(data.queries), k)
        assert row.recall == pytest.approx(numpy_recall(row.found, data, passing, k))
        assert row.outside_rows == 0
        assert set(row.found[row.found >= 0].tolist()) <= set(passing.tolist())
        again = answers(store, data.queries, k, None if j == 0 else tag_filter(j))
        assert set(again[again >= 0].tolist()) <= set(passing.tolist())


def test_tags_let_through_exactly_the_asked_shares() -> None:
    tags = np.asarray(selectivity_tags(1000, (0.01, 0.10, 0.50), seed=1))
    counts = [int(np.isin(tags, [f"p{i + 1}" for i in range(j)]).sum()) for j in (1, 2, 3)]
    assert counts == [10, 100, 500]
    assert (tags == "other").sum() == 500
    # another seed draws other rows, in the same numbers
    other = np.asarray(selectivity_tags(1000, (0.01, 0.10, 0.50), seed=2))
    assert (other == "p1").sum() == 10 and set(np.flatnonzero(other == "p1")) != set(
        np.flatnonzero(tags == "p1"))


@pytest.mark.parametrize("bad", [(), (0.5, 0.1), (0.0, 0.5), (0.1, 1.0), (0.1, 0.1)])
def test_selectivities_must_be_increasing_fractions(bad: tuple[float, ...]) -> None:
    with pytest.raises(UsageError, match="increasing fractions"):
        selectivity_tags(100, bad)


def test_lancedb_exact_search_has_full_recall_at_every_selectivity(
        tmp_path: Path, data: Dataset, stores: list[VectorStore]) -> None:
    # below index_threshold LanceDB searches exactly: recall 1 everywhere, whatever the filter
    result = _run(f"lancedb://{tmp_path / 'db'}?table=t", data, stores)
    assert [r.selectivity for r in result.rows] == [1.0, 0.01, 0.10, 0.50]
    assert [r.rows_passing for r in result.rows] == [3000, 30, 300, 1500]
    assert all(r.recall == 1.0 and r.short_queries == 0 for r in result.rows)
    _check_against_numpy(result, stores[0], data)
    assert result.strategy.startswith("prefilter")


def test_lancedb_ann_recall_matches_brute_force(
        tmp_path: Path, data: Dataset, stores: list[VectorStore]) -> None:
    # index_threshold=1000: the 3000 rows are written at once and indexed (IVF_HNSW_SQ)
    result = _run(f"lancedb://{tmp_path / 'db'}?table=t&index_threshold=1000", data, stores)
    store = stores[0]
    assert isinstance(store, SupportsIndexSize) and store.index_bytes() > 0  # an ANN index serves
    _check_against_numpy(result, stores[0], data)
    assert all(r.short_queries == 0 for r in result.rows)  # prefilter: k rows always come back


def test_pgvector_filters_in_the_engine_both_ways(
        postgres_server: PostgresServer, pg_env: None, data: Dataset,
        stores: list[VectorStore]) -> None:
    on = _run(postgres_server.uri(f"flt{next(_names)}"), data, stores)
    _check_against_numpy(on, stores[-1], data)
    assert on.strategy.startswith("iterative index scan")
    assert all(r.short_queries == 0 for r in on.rows)
    off = _run(postgres_server.uri(f"flt{next(_names)}", "iterative_scan=off"), data, stores)
    _check_against_numpy(off, stores[-1], data)
    assert off.strategy.startswith("post-filter")


@pytest.mark.slow
def test_pgvector_post_filter_loses_rows_that_the_iterative_scan_keeps(
        postgres_server: PostgresServer, pg_env: None, stores: list[VectorStore]) -> None:
    # At 20,000 rows PostgreSQL answers the 10 % filter through the HNSW index (at 1 % its
    # planner may prefer an exact scan of the few rows that pass, so 1 % is not asserted).
    # Without the iterative scan the index hands over its ef_search = 40 best candidates, of
    # which ~10 % pass: fewer than k.
    big = synthetic(20_000, 8, topics=10, queries=10, seed=4)
    on = _run(postgres_server.uri(f"flt{next(_names)}"), big, stores)
    off = _run(postgres_server.uri(f"flt{next(_names)}", "iterative_scan=off"), big, stores)
    ten = 2  # rows: 100 %, 1 %, 10 %, 50 %
    assert on.rows[ten].short_queries == 0
    assert off.rows[ten].short_queries == len(big.queries)
    assert off.rows[ten].recall < on.rows[ten].recall
    _check_against_numpy(off, stores[-1], big)


def test_a_store_that_holds_rows_is_refused(tmp_path: Path, data: Dataset,
                                            stores: list[VectorStore]) -> None:
    uri = f"lancedb://{tmp_path / 'db'}?table=t"
    _run(uri, synthetic(50, 16, queries=2, seed=1), stores)
    with pytest.raises(UsageError, match="already holds 50 chunks"):
        open_empty(uri)
