"""The operation loop on pgvector (a real PostgreSQL): `monitor --reindex-below` triggers the
verified reindex of a versioned store, which copies *production* into a new version with a fresh
ANN index. So the store needs a production version first: without one the loop says so on every
run (and holds no guard); with one it builds, verifies and switches, and a new index that fails
the floor is never switched in."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recallwatch.history import History
from recallwatch.ops.autoreindex import AUTO_REINDEX_META_KEY
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.reindex import REINDEX_META_KEY
from recallwatch.stores import open_store
from recallwatch.stores.versioned import VersionedStore
from tests.pg import PostgresServer

from .test_reindex_versioned import clustered

pytestmark = pytest.mark.slow  # starts a PostgreSQL server

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
_tables = itertools.count()


@pytest.fixture
def pg_store(postgres_server: PostgresServer, pg_env: None) -> Iterator[VersionedStore]:
    # IVFFlat probing 1 list of 50: the live index misses neighbours, so recall is under 1
    uri = postgres_server.uri(f"loop{next(_tables)}", "index=ivfflat&lists=50&probes=1")
    store = open_store(uri, create=True)
    assert isinstance(store, VersionedStore)
    try:
        yield store
    finally:
        store.close()


def test_the_loop_on_pgvector(pg_store: VersionedStore, tmp_path: Path) -> None:
    chunks, vectors, queries = clustered()
    pg_store.upsert(chunks, vectors)
    v1 = pg_store.current_version()
    probes = ProbeSet("probes", "1", vectors=queries)
    history = History(tmp_path / "h.db")

    # no production version yet: nothing to copy; the loop says why instead of failing
    unpromoted = run_monitor(pg_store, probes, floor=0.0, reindex_below=1.0, history=history,
                             now=T0)
    assert unpromoted.recall < 1.0 and unpromoted.reindex is not None
    assert unpromoted.reindex["result"] is None and not unpromoted.reindex["switched"]
    assert "no production version to reindex: promote one first" in unpromoted.reindex["skipped"]
    assert pg_store.get_meta(AUTO_REINDEX_META_KEY) is None  # no attempt: no guard held
    assert history.monitor_runs(kind="reindex") == []

    pg_store.promote(v1)  # as `recallwatch ops promote` does after an accepted gate run
    versions = [v.version for v in pg_store.versions()]
    hashes = pg_store.content_hashes()

    # a new index that cannot reach the floor (1.0, with the same one-list probing) is refused
    refused = run_monitor(pg_store, probes, floor=1.0, reindex_below=1.0, history=history,
                          now=T0)
    loop = refused.reindex
    assert loop is not None and loop["result"] is not None and not loop["switched"]
    assert loop["result"]["recall_candidate"] < 1.0
    assert "not switched" in loop["result"]["reason"]
    assert pg_store.production_version() == v1 == pg_store.current_version()
    assert [v.version for v in pg_store.versions()] == versions
    assert pg_store.get_meta(REINDEX_META_KEY) is None
    assert [r.status for r in history.monitor_runs(kind="reindex")] == ["refused"]

    # past the guard's window, a floor the new index reaches and any loss against the live one
    # accepted (40 probes of a one-list IVFFlat leave the difference a wide interval; the
    # comparison is tested in test_reindex_tolerance.py): built, verified, switched
    switched = run_monitor(pg_store, probes, floor=0.0, reindex_below=1.0, history=history,
                           now=T0 + timedelta(hours=25), max_recall_loss=1.0)
    loop = switched.reindex
    assert loop is not None and loop["switched"], loop
    new = loop["result"]["version"]
    assert new != v1 and pg_store.production_version() == new
    assert pg_store.content_hashes() == hashes  # same content, new index
    meta = pg_store.get_meta(REINDEX_META_KEY)
    assert meta["built_on"] == v1 and meta["current"]["version"] == new
    assert [r.status for r in history.monitor_runs(kind="reindex")] == ["switched", "refused"]
    assert history.monitor_runs(kind="reindex")[0].payload["auto"]["trigger"] == "monitor"
    # what the monitor recorded of the store: its rows and the index's size, as PostgreSQL says
    assert switched.resources is not None and switched.resources["rows"] == len(chunks)
    assert switched.resources["index_bytes"] == pg_store.index_bytes() > 0
    history.close()
