"""Shared fixtures. Paths to real data that no one here wrote live in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

# The session's PostgreSQL (started on first use), shared by the store, history and web tests.
from tests.pg import pg_databases, pg_env, postgres_server

__all__ = ["pg_databases", "pg_env", "postgres_server"]

ROOT = Path(__file__).resolve().parent.parent
CRANFIELD = ROOT.parent / "shared" / "data" / "cranfield"


@pytest.fixture
def cranfield_dir() -> Path:
    if not (CRANFIELD / "cranqrel").exists():
        pytest.skip(f"Cranfield collection not found at {CRANFIELD} "
                    "(it is not copied into the repo)")
    return CRANFIELD
