"""Open a history: the backend its location names, its schema migrated (or, read-only, checked).

Here rather than in :mod:`._backend`, so that the backends and the schema import nothing of each
other: ``_backend`` ← ``_pg``, ``_backend`` ← ``_schema``, and this module above the three.
"""

from __future__ import annotations

import re
from pathlib import Path

from recallwatch.errors import UsageError
from recallwatch.history._backend import Backend, SQLiteBackend, is_postgresql
from recallwatch.history._schema import check_schema, migrate

__all__ = ["open_backend"]


def open_backend(location: str | Path, *, create: bool, timeout: float,
                 read_only: bool) -> Backend:
    """The backend ``location`` names (``postgresql://…`` or a file path), migrated to this
    recallwatch's schema, or checked against it when ``read_only``."""
    prepare = check_schema if read_only else migrate
    if is_postgresql(location):
        from recallwatch.history._pg import PostgresBackend

        return PostgresBackend.open(str(location), create=create, timeout=timeout,
                                    read_only=read_only, prepare=prepare)
    if re.match(r"(?i)postgres(ql)?:/[^/]", str(location)):
        # Path("postgresql://u@h/db") is "postgresql:/u@h/db": the URI was made a file path.
        raise UsageError(f"history {location}: a PostgreSQL URI was turned into a file path "
                         "(it lost a '/'); pass it as a string")
    return SQLiteBackend.open(Path(location), create=create, timeout=timeout,
                              read_only=read_only, prepare=prepare)
