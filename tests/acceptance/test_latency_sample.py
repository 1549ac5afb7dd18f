"""The gate's latency sample: how many golden queries are timed with one search call each.
Nothing here asserts a duration: the tests count the single-query calls a real LanceDB store
receives, and check the automatic sample's budget against the run's own recorded times."""

from __future__ import annotations

import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.retrieve import (
    LATENCY_QUERIES,
    LATENCY_SHARE,
    latency_budget_count,
    latency_rows,
    spread_order,
)
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.policy import parse_policy
from recallwatch.stores.base import Hits, VectorStore
from recallwatch.stores.lancedb.store import LanceStore

from .helpers import DIM, numbered_golden, numbered_store, random_vectors

EMBEDDER = CallableEmbedder(random_vectors, name="test-random", dimension=DIM)


class Counting:
    """A real store that counts the single-query search calls it receives and, optionally,
    spends ``scan`` seconds in every call (a store without an index reads every row per call)."""

    def __init__(self, inner: VectorStore, scan: float = 0.0) -> None:
        self.inner, self.scan, self.singles = inner, scan, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def search(self, vectors: np.ndarray, k: int, **kw: Any) -> list[Hits]:
        if len(vectors) == 1:
            self.singles += 1
        time.sleep(self.scan)
        return self.inner.search(vectors, k, **kw)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> LanceStore:
    return numbered_store(tmp_path_factory.mktemp("kb") / "db", 300)


_golden = numbered_golden


def test_rows_are_spread_over_the_set_first_and_last_included() -> None:
    assert latency_rows(0) == [] and latency_rows(78) == list(range(78))
    assert latency_rows(LATENCY_QUERIES) == list(range(LATENCY_QUERIES))
    assert latency_rows(1000, 0) == [] and latency_rows(1000, 1) == [0]
    for n, count in ((1000, LATENCY_QUERIES), (1000, 7), (12_345, 250)):
        rows = latency_rows(n, count)
        assert len(rows) == count and rows[0] == 0 and rows[-1] == n - 1
        gaps = [b - a for a, b in pairwise(rows)]
        assert max(gaps) - min(gaps) <= 1  # evenly spread


def test_every_prefix_of_the_spread_order_covers_the_set() -> None:
    for m in (1, 2, 5, 64, 100):
        order = spread_order(m)
        assert sorted(order) == list(range(m)) and order[0] == 0
        for p in range(2, m + 1):
            prefix = sorted(order[:p])
            # no gap wider than twice the even spacing of p points over m
            assert max(b - a for a, b in pairwise([*prefix, m])) <= 2 * -(-m // p)


def test_budget_count_is_at_least_the_timed_call_and_at_most_the_cap() -> None:
    assert latency_budget_count(1.0, 0.1) == 10
    assert latency_budget_count(0.01, 0.1) == 1  # the first call is already spent
    assert latency_budget_count(100.0, 0.001) == LATENCY_QUERIES
    assert latency_budget_count(1.0, 0.0) == LATENCY_QUERIES


@pytest.mark.parametrize("n", [0, 1, 7, 40])
def test_an_explicit_sample_times_that_many_queries_and_is_recorded(store: LanceStore,
                                                                    n: int) -> None:
    counting = Counting(store)
    result = run_gate(_golden(40), store=counting, embedder=EMBEDDER,  # type: ignore[arg-type]
                      latency_sample=n)
    assert counting.singles == n
    assert result.config.latency_sample == n
    if n == 0:
        assert result.cost is None
    else:
        assert result.cost is not None and result.cost["queries"] == n


def test_the_sample_changes_no_quality_figure_nor_the_run_hash(store: LanceStore) -> None:
    runs = [run_gate(_golden(30), store=store, embedder=EMBEDDER, latency_sample=n)
            for n in (None, 0, 30)]
    assert len({r.config_hash for r in runs}) == 1
    assert len({tuple(q.to_dict().items()).__repr__() for r in runs for q in r.queries}) == 30
    assert runs[0].config.latency_sample == "auto"


def test_the_automatic_sample_keeps_within_its_share_of_the_retrieval(store: LanceStore) -> None:
    # every call costs a full scan, the batched one included: the old fixed sample of 40
    # single calls would have cost 40 times the batched search
    counting = Counting(store, scan=0.02)
    result = run_gate(_golden(40), store=counting, embedder=EMBEDDER,  # type: ignore[arg-type]
                      latency_sample=None)
    assert result.cost is not None
    timed = result.cost["queries"]
    assert counting.singles == timed and 1 <= timed < 40
    # the budget is a share of what the run spent before the sample (recorded in its timings)
    sampled = result.cost["search_mean_ms"] * timed / 1000
    before = result.timings.embed + result.timings.search - sampled
    assert sampled <= LATENCY_SHARE * before + 2 * result.cost["search_max_ms"] / 1000


def test_bad_sample_settings_are_refused(store: LanceStore, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"latency_sample=.*0 or more"):
        run_gate(_golden(3), store=store, embedder=EMBEDDER, latency_sample=-1)
    capped = parse_policy({"max_latency_p99_ms": 50}, tmp_path / "policy.yaml")
    with pytest.raises(UsageError, match="max_latency_p99_ms 50"):
        run_gate(_golden(3), store=store, embedder=EMBEDDER, policy=capped, latency_sample=0)
