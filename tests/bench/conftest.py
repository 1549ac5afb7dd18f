from __future__ import annotations

import pytest

from recallwatch.bench.datasets import Dataset, synthetic


@pytest.fixture(scope="session")
def small() -> Dataset:
    """The chapter's synthetic collection, small enough for every test."""
    return synthetic(3000, 32, topics=20, queries=60, seed=7)
