from __future__ import annotations

import pytest

from recallwatch.embedders.use import USEEmbedder


@pytest.fixture(scope="session")
def use() -> USEEmbedder:
    # One model per session: loading the weights is the slow part.
    return USEEmbedder()
