"""Where a run history lives: a SQLite file (stdlib ``sqlite3``, the default) or a PostgreSQL
database (``postgresql://…``, psycopg, in :mod:`recallwatch.history._pg`);
:func:`recallwatch.history._open.open_backend` picks one and migrates or checks its schema.

:class:`~recallwatch.history.History` writes its SQL once, in the spelling both engines accept,
with ``?`` placeholders. A backend is the small layer where they differ:

* placeholders: ``?`` | ``%s``;
* one writer at a time: ``BEGIN IMMEDIATE`` (the file's lock) | ``BEGIN`` and a transaction
  advisory lock;
* column types in the migrations' DDL: as written | ``INTEGER`` → ``BIGINT``, ``REAL`` →
  ``DOUBLE PRECISION``, ``AUTOINCREMENT`` → an identity column (same ranges, same precision);
* ids after rows copied with explicit ids: ``AUTOINCREMENT`` follows by itself | ``setval``;
* the integrity check: ``PRAGMA integrity_check`` | the schema, and every table reads;
* read-only: a ``mode=ro`` URI | ``default_transaction_read_only``.

JSON payloads are ``TEXT`` on both: the stored text is what the gate wrote, byte for byte
(``jsonb`` would reorder keys, and neither ``json`` nor ``jsonb`` accepts the ``NaN`` that
``json.dumps`` may write), so ``history copy`` is lossless in both directions.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from recallwatch.errors import HistoryError

__all__ = ["Backend", "Prepare", "SQLiteBackend", "is_postgresql"]

_PG_SCHEMES = ("postgresql://", "postgres://")
#: what opening does once connected: migrate the schema, or check it (read-only); given by
#: :func:`recallwatch.history._open.open_backend`, so that no backend imports the schema
Prepare = Callable[["Backend"], Any]


def is_postgresql(location: str | Path) -> bool:
    """Whether ``--history`` names a PostgreSQL database rather than a file."""
    return isinstance(location, str) and location.lower().startswith(_PG_SCHEMES)


class Backend:
    """One open connection to a history, and what its engine spells differently."""

    kind: ClassVar[Literal["sqlite", "postgresql"]]
    #: the driver's database errors, and the subset raised by a violated unique key
    errors: tuple[type[Exception], ...]
    duplicate: tuple[type[Exception], ...]

    def __init__(self, location: str, conn: Any) -> None:
        self.location = location  # what messages show: a file path or a redacted URI
        self.conn = conn

    def sql(self, statement: str) -> str:
        """``statement`` (``?`` placeholders) in this engine's parameter style."""
        return statement

    def execute(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (none for a write without ``RETURNING``)."""
        cur = self.conn.execute(self.sql(statement), tuple(params))
        return list(cur.fetchall()) if cur.description is not None else []

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.conn.cursor().executemany(self.sql(statement), rows)

    def has_table(self, name: str) -> bool:
        """Whether the history's database (PostgreSQL: its schema) holds table ``name``."""
        raise NotImplementedError

    def columns(self, table: str) -> list[str]:
        """The columns of ``table`` (one of the schema's, never user input), in order."""
        cur = self.conn.execute(f"SELECT * FROM {table} LIMIT 0")
        return [d[0] for d in cur.description]

    def begin_write(self) -> None:
        """Start a transaction that excludes every other writer of this history until it ends;
        reads inside it see every run committed before it began."""
        raise NotImplementedError

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        """Roll back; quietly when the connection is already gone (the engine rolled back, and
        the error that got us here is the one to report)."""
        with contextlib.suppress(*self.errors):
            self.conn.execute("ROLLBACK")

    def bootstrap(self) -> None:
        """Inside the first migration transaction, before anything is created (PostgreSQL: the
        schema)."""

    def ddl(self, statement: str) -> str:
        """A migration statement (written for SQLite) in this engine's types."""
        return statement

    def reset_identity(self, table: str, column: str) -> None:
        """After rows were inserted with explicit ids: the next id follows the largest."""

    def integrity_check(self) -> str:
        """``ok``, or what is wrong."""
        raise NotImplementedError

    def byte_length(self, column: str) -> str:
        """SQL for the size in bytes of a text or binary ``column`` (a schema column name)."""
        raise NotImplementedError

    def size_bytes(self) -> int:
        """The bytes the history takes on disk (SQLite: the file and its journal; PostgreSQL:
        its tables with their indexes and TOAST)."""
        raise NotImplementedError

    def reclaim(self) -> None:
        """After rows were deleted, outside any transaction: give their space back where the
        engine can (SQLite ``VACUUM``: the file shrinks; PostgreSQL ``VACUUM``: the space is
        reused by later writes, the files keep their size)."""
        raise NotImplementedError

    def describe(self, exc: BaseException) -> str:
        """An engine error as one line for the user."""
        return " ".join(str(exc).split())

    def close(self) -> None:
        self.conn.close()


class SQLiteBackend(Backend):
    """A history file: WAL journal, a busy timeout, ``synchronous=FULL``, foreign keys on."""

    kind = "sqlite"
    errors = (sqlite3.DatabaseError,)
    duplicate = (sqlite3.IntegrityError,)

    @classmethod
    def open(cls, path: Path, *, create: bool, timeout: float, read_only: bool,
             prepare: Prepare) -> SQLiteBackend:
        if path.is_dir():
            raise HistoryError(f"{path}: expected a run history file, found a directory (name "
                               f"a file in it, e.g. {path / 'history.db'})")
        if read_only:
            if not path.is_file():
                raise HistoryError(f"no run history at {path} (run the gate with --history "
                                   "first, or name the file with --history)")
        elif not path.exists():
            if not create:
                raise HistoryError(f"no run history at {path} (run the gate first, or name "
                                   "the file with --history)")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a file where a folder must be, no permission…
                raise HistoryError(f"{path}: cannot create the run history's folder "
                                   f"{path.parent}: {exc.strerror}") from None
        backend = None
        try:
            # isolation_level=None: transactions are ours (BEGIN IMMEDIATE), never implicit.
            if read_only:  # SQLite itself refuses every write
                conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                       timeout=timeout, isolation_level=None)
            else:
                conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
            backend = cls(str(path), conn)
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if not read_only:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("PRAGMA foreign_keys = ON")
            prepare(backend)
        except sqlite3.DatabaseError as exc:
            if backend is not None:
                backend.close()
            raise HistoryError(f"{path}: cannot open the run history: {exc}") from None
        except BaseException:
            if backend is not None:
                backend.close()
            raise
        return backend

    def begin_write(self) -> None:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise HistoryError(f"{self.location}: cannot start a write: {exc}") from None

    def has_table(self, name: str) -> bool:
        return bool(self.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                 (name,)))

    def integrity_check(self) -> str:
        return str(self.execute("PRAGMA integrity_check")[0][0])

    def byte_length(self, column: str) -> str:
        return f"length(CAST({column} AS BLOB))"

    def size_bytes(self) -> int:
        path = Path(self.location)
        return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal"))
                   if p.exists())

    def reclaim(self) -> None:
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
