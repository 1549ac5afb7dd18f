from __future__ import annotations

from collections.abc import Iterator

import pytest

from recallwatch.bench.datasets import Dataset, synthetic
from recallwatch.stores.base import VectorStore


@pytest.fixture(scope="session")
def small() -> Dataset:
    """The chapter's synthetic collection, small enough for every test."""
    return synthetic(3000, 32, topics=20, queries=60, seed=7)


@pytest.fixture
def stores() -> Iterator[list[VectorStore]]:
    """The stores a test opens, closed when it ends."""
    opened: list[VectorStore] = []
    yield opened
    for store in opened:
        store.close()
