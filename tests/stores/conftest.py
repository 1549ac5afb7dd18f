"""The store tests' PostgreSQL: the session server lives in :mod:`tests.pg` (shared with the
history tests; its fixtures are registered once, in tests/conftest.py)."""

from tests.pg import PG_PASSWORD, PostgresServer, _pg_package, running_server

__all__ = ["PG_PASSWORD", "PostgresServer", "_pg_package", "running_server"]
