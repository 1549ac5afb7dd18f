"""Shared fixtures. Paths to real data that no one here wrote live in ../shared/data."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.testing

# The session's PostgreSQL (started on first use), shared by the store, history and web tests.
from tests.pg import pg_databases, pg_env, postgres_server

__all__ = ["pg_databases", "pg_env", "postgres_server"]

ROOT = Path(__file__).resolve().parent.parent

# typer's test runner builds the whole command tree (every command's parameters, read from its
# signature) again on every invoke: most of the time of a short command in the CLI tests. Running
# a command does not change the tree, so every test's runner builds it once per application.
typer.testing._get_command = functools.cache(typer.testing._get_command)
CRANFIELD = ROOT.parent / "shared" / "data" / "cranfield"


@pytest.fixture
def cranfield_dir() -> Path:
    if not (CRANFIELD / "cranqrel").exists():
        pytest.skip(f"Cranfield collection not found at {CRANFIELD} "
                    "(it is not copied into the repo)")
    return CRANFIELD


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """recallwatch's user cache (parsed runs, the USE model) under the test run's temporary
    directory, never in the home of whoever runs the tests."""
    before = os.environ.get("RECALLWATCH_CACHE_DIR")
    os.environ["RECALLWATCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("recallwatch-cache"))
    yield
    if before is None:
        os.environ.pop("RECALLWATCH_CACHE_DIR", None)
    else:
        os.environ["RECALLWATCH_CACHE_DIR"] = before
