"""The time a store's writes spend building an ANN index, kept apart from writing: a write that
crosses the index threshold builds the first index in the same call (LanceDB), and an ingestion
shows that build's seconds on their own (:class:`~recallwatch.stores.base.SupportsIndexBuildTime`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["BuildTimer"]


class BuildTimer:
    """Times the index builds a store's writes make; answers ``SupportsIndexBuildTime``."""

    _build_seconds = 0.0

    def index_build_seconds(self) -> float:
        """Seconds this store object's writes have spent building an ANN index so far."""
        return self._build_seconds

    def _timed_build(self, build: Callable[[], None]) -> None:
        started = time.perf_counter()
        try:
            build()
        finally:
            self._build_seconds += time.perf_counter() - started
