"""Fixtures of the history tests (``kb`` is defined in helpers, so the CLI tests share it).

``new_history`` makes fresh, empty histories on the backend under test: tests that take it run
twice, on a SQLite file and on a PostgreSQL database of the session's server."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.history.helpers import kb

__all__ = ["history_at", "kb", "new_history"]


@pytest.fixture(params=["sqlite", "postgresql"])
def new_history(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """A factory: each call returns the location of a new history (not created yet)."""
    if request.param == "postgresql":
        factory: Callable[[], str] = request.getfixturevalue("pg_databases")
        return factory
    numbers = itertools.count()
    return lambda: str(tmp_path / f"h{next(numbers)}.db")


@pytest.fixture
def history_at(new_history: Callable[[], str]) -> str:
    """One new history's location, on each backend."""
    return new_history()
