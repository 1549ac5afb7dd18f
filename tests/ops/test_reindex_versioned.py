"""Reindex and rollback on the adapters without native versions (pgvector on a real PostgreSQL,
Qdrant local mode, Milvus Lite, Chroma, faiss and hnswlib index files): the switch is atomic under
four threads querying production, rollback restores the old version, content never changes, and
a failed verification switches nothing."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import StoreError, UsageError
from recallwatch.history import History, record_gate_run
from recallwatch.ops.index_health import INDEX_BUILDS_META_KEY, index_build
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.promote import check_promotion
from recallwatch.ops.reindex import (
    REINDEX_META_KEY,
    reindex,
    reindexed_from,
    rollback,
)
from recallwatch.stores.base import Chunk
from recallwatch.stores.versioned import VersionedStore
from recallwatch.stores.versioned_index import content_difference
from tests.history.helpers import gate_run, golden_set
from tests.stores import conftest as _servers
from tests.stores import test_conformance as _conformance
from tests.stores.conformance import Adapter

# The store tests' adapter fixture (the PostgreSQL server it starts is tests/conftest.py's).
adapter = _conformance.adapter

VERSIONED = ["pgvector", "qdrant-local", "milvus-lite", "chroma", "faiss", "hnswlib"]
N, DIM, K = 2000, 32, 10
# Qdrant's local mode commits every point to SQLite on its own (18 ms a point measured here:
# 2,000 rows took 37 s to write, and a reindex writes them again); its search is brute force
# anyway, so a smaller collection tests the same switch.
ROWS = {"qdrant-local": 300}


def clustered(n: int = N, seed: int = 0) -> tuple[list[Chunk], np.ndarray, np.ndarray]:
    """Chunks on 20 topics (so an ANN index has structure to get wrong) and 40 probe queries."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, DIM)).astype(np.float32)
    vectors = (centres[rng.integers(0, 20, n)] + 0.6 * rng.normal(size=(n, DIM))).astype(
        np.float32)
    queries = (centres[rng.integers(0, 20, 40)] + 0.6 * rng.normal(size=(40, DIM))).astype(
        np.float32)
    chunks = [Chunk(id=f"c{i:05d}", text=f"chunk {i}", doc_id=f"d{i // 10}",
                    content_hash=f"h{i}") for i in range(n)]
    return chunks, vectors, queries


def loaded(adapter: Adapter) -> tuple[VersionedStore, np.ndarray, str]:
    """A store holding the corpus in production (as after a gated ingestion)."""
    store = adapter.open()
    assert isinstance(store, VersionedStore)
    chunks, vectors, queries = clustered(ROWS.get(adapter.name, N))
    store.upsert(chunks, vectors)
    v1 = store.current_version()
    store.promote(v1)
    return store, queries, v1


class Readers:
    """Four threads querying production through the store, the way a service would: the
    production version, then an ANN top-10 on it. Every answer must be 10 ids of one whole
    version; anything else is recorded."""

    def __init__(self, store: VersionedStore, queries: np.ndarray) -> None:
        self.store, self.queries = store, queries
        self.errors: list[BaseException] = []
        self.bad: list[str] = []
        self.seen: dict[str, int] = {}
        self.answered = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(4)]

    def _run(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        while not self._stop.is_set():
            try:
                prod = self.store.production_version()
                assert prod is not None
                view = self.store.checkout(prod)
                q = self.queries[rng.integers(len(self.queries))]
                hits = view.search(q[None, :], K)[0]
                ok = len(hits.ids) == K and len(set(hits.ids)) == K
                with self._lock:
                    self.answered += 1
                    self.seen[prod] = self.seen.get(prod, 0) + 1
                    if not ok:
                        self.bad.append(f"version {prod}: {len(hits.ids)} ids")
            except Exception as exc:  # recorded, then asserted empty
                with self._lock:
                    self.errors.append(exc)

    def wait_for(self, answers: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.answered < answers and time.monotonic() < deadline and not self.errors:
            time.sleep(0.01)

    def __enter__(self) -> Readers:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=120)


@pytest.mark.parametrize("adapter", VERSIONED, indirect=True)
def test_reindex_switches_atomically_and_rollback_restores(adapter: Adapter) -> None:
    store, queries, v1 = loaded(adapter)
    hashes = store.content_hashes()
    before_ids = [h.ids for h in store.search(queries, K)]
    probes = ProbeSet("probes", "1", vectors=queries)
    with Readers(store, queries) as readers:
        readers.wait_for(40)
        result = reindex(store, probes, k=K, floor=0.5)
        at_switch = readers.answered
        readers.wait_for(at_switch + 40)
    assert readers.errors == [] and readers.bad == []
    assert result.switched, result.reason
    new = result.version
    assert result.built_on_version == v1 and new != v1
    assert set(readers.seen) == {v1, new}, readers.seen  # served before and after the switch
    assert readers.answered >= at_switch + 40
    assert store.production_version() == new == store.current_version()
    # the new version is a copy: same ids, same content hashes; the old one is kept
    assert store.checkout(new).content_hashes() == hashes == store.checkout(v1).content_hashes()
    assert store.checkout(v1).count() == len(hashes)
    assert 0.5 <= result.recall_candidate <= 1.0 and 0.0 <= result.recall_before <= 1.0

    info = store.get_meta(REINDEX_META_KEY)
    assert info["previous"]["version"] == v1 and info["current"]["version"] == new
    assert info["recall_after"] == result.recall_candidate
    assert info["recall_before"] == result.recall_before
    assert reindexed_from(store, new) == v1 and reindexed_from(store, v1) is None
    build = index_build(store)  # what the monitor reports as the live index's age
    assert build is not None and build["kind"] == "reindex" and build["version"] == new
    report = run_monitor(store, probes, k=K, floor=0.0)
    assert report.index_age_seconds is not None and report.index_age_seconds < 600
    assert report.index_version == new

    done = rollback(store)
    assert done["version"] == v1
    assert store.production_version() == v1 == store.current_version()
    assert [v.version for v in store.versions() if v.production] == [v1]  # listed as production
    assert store.content_hashes() == hashes
    assert [h.ids for h in store.search(queries, K)] == before_ids  # the old index serves again
    last = store.get_meta(INDEX_BUILDS_META_KEY)[-1]
    assert last["kind"] == "rollback" and last["version"] == v1
    with pytest.raises(StoreError, match="no previous index to roll back"):
        rollback(store)
    # writes after a rollback continue from the restored version, in a new version
    store.upsert([Chunk(id="late", text="late", content_hash="hl")], queries[:1])
    assert int(store.current_version()) > int(new)
    assert store.production_version() == v1 and store.checkout(v1).count() == len(hashes)


@pytest.mark.parametrize("adapter", VERSIONED, indirect=True)
def test_failed_verification_switches_nothing(adapter: Adapter) -> None:
    store, queries, v1 = loaded(adapter)
    versions = [v.version for v in store.versions()]
    with Readers(store, queries) as readers:
        readers.wait_for(20)
        result = reindex(store, ProbeSet("p", "1", vectors=queries), k=K, floor=1.01)
    assert readers.errors == [] and readers.bad == [] and set(readers.seen) == {v1}
    assert not result.switched and "not switched" in result.reason
    assert result.version == v1 and result.recall_candidate <= 1.0
    # the candidate copy is dropped; production and the current version are unchanged
    assert store.production_version() == v1 == store.current_version()
    assert [v.version for v in store.versions()] == versions
    assert store.get_meta(REINDEX_META_KEY) is None
    with pytest.raises(StoreError, match="no previous index"):
        rollback(store)
    # the dropped candidate's number is not reused (history records may name it)
    store.upsert([Chunk(id="late", text="late", content_hash="hl")], queries[:1])
    assert int(store.current_version()) == int(v1) + 2


def test_refusals_name_what_to_do(tmp_path: Path) -> None:
    from recallwatch.stores import open_store

    store = open_store(f"faiss://{tmp_path}/idx", create=True)
    chunks, vectors, queries = clustered(300)
    store.upsert(chunks, vectors)
    probes = ProbeSet("p", "1", vectors=queries)
    with pytest.raises(UsageError, match="no production version to reindex: promote one"):
        reindex(store, probes)
    store.promote(store.current_version())
    store.upsert([Chunk(id="new", text="new", content_hash="hn")], queries[:1])
    with pytest.raises(UsageError, match="version 2 is current but version 1 is in production"):
        reindex(store, probes)
    with pytest.raises(StoreError, match="opened read-only"):
        reindex(store.checkout("1"), probes)


def test_rollback_refuses_when_production_moved_since(tmp_path: Path) -> None:
    from recallwatch.stores import open_store

    store = open_store(f"hnswlib://{tmp_path}/idx", create=True)
    chunks, vectors, queries = clustered(300)
    store.upsert(chunks, vectors)
    store.promote(store.current_version())
    assert reindex(store, ProbeSet("p", "1", vectors=queries), floor=0.0).switched
    store.upsert([Chunk(id="new", text="new", content_hash="hn")], queries[:1])
    later = store.current_version()
    store.promote(later)
    with pytest.raises(StoreError, match=f"production is version {later}, not version 2"):
        rollback(store)
    assert store.production_version() == later


def test_a_copy_with_other_content_is_not_switched(tmp_path: Path) -> None:
    from recallwatch.stores import open_store

    store = open_store(f"faiss://{tmp_path}/idx", create=True)
    assert isinstance(store, VersionedStore)
    chunks, vectors, _ = clustered(300)
    store.upsert(chunks, vectors)
    store.promote(store.current_version())
    staged = store.stage_index()
    assert staged.content_check() is None
    # simulate a copy that lost a row (the engine primitive, below every public check)
    store._remove(store._table(int(staged.candidate.current_version())), ["c00007"])
    assert staged.content_check() == ("version 2 does not hold the content of version 1 (1 removed "
                                  "(e.g. c00007)): not switched (a reindex must not change "
                                  "content)")
    assert content_difference({"a": "1", "b": "2"}, {"a": "x", "c": "3"}) == (
        "1 added (e.g. c), 1 removed (e.g. b), 1 changed (e.g. a)")


def test_a_reindexed_version_inherits_the_gate_verdict(tmp_path: Path) -> None:
    from recallwatch.stores import open_store

    store = open_store(f"faiss://{tmp_path}/idx", create=True)
    chunks, vectors, queries = clustered(300)
    store.upsert(chunks, vectors)
    v1 = store.current_version()
    store.promote(v1)
    db = tmp_path / "h.db"
    g = golden_set()
    accepted = dataclasses.replace(gate_run(g), store={"uri": store.uri, "version": v1})
    assert accepted.verdict == "ACCEPT"
    record_gate_run(accepted, db)
    result = reindex(store, ProbeSet("p", "1", vectors=queries), floor=0.0)
    v2 = result.version
    hashes = {"dataset_hash": accepted.dataset_hash, "policy_hash": accepted.policy_hash}
    with History(db) as h:
        d = check_promotion(h, store, version=v2, **hashes)
        assert d.allowed and d.accepted_run == accepted.run_id
        assert any(f"verified reindex of version {v1}" in n for n in d.notes)
        # a chain of reindexes inherits from the gated ancestor
        v3 = reindex(store, ProbeSet("p", "1", vectors=queries), floor=0.0).version
        assert check_promotion(h, store, version=v3, **hashes).accepted_run == accepted.run_id
    # once the reindexed version is gated itself, its own newest verdict decides
    moved = {f"q{i:02d}": {f"q{i:02d}_a": 40} for i in range(10)}
    stopped = dataclasses.replace(gate_run(g, moved), store={"uri": store.uri, "version": v2})
    assert stopped.verdict == "STOP"
    record_gate_run(stopped, db)
    with History(db) as h:
        d = check_promotion(h, store, version=v2, **hashes)
        assert not d.allowed and d.accepted_run is None and not d.notes
    # a version that is not a reindex inherits nothing
    store.upsert([Chunk(id="new", text="new", content_hash="hn")], queries[:1])
    with History(db) as h:
        d = check_promotion(h, store, version=store.current_version(), **hashes)
        assert not d.allowed and not d.notes


def test_cli_reindex_and_rollback_on_index_files(tmp_path: Path) -> None:
    from recallwatch.stores import open_store

    uri = f"hnswlib://{tmp_path}/idx"
    store = open_store(uri, create=True)
    chunks, vectors, queries = clustered(300)
    store.upsert(chunks, vectors)
    store.promote(store.current_version())
    store.close()
    probes = tmp_path / "probes.npy"
    np.save(probes, queries)
    runner = CliRunner()
    refused = runner.invoke(app, ["ops", "reindex", "--store", uri, "--probes", str(probes),
                                  "--floor", "1.01", "--no-history"])
    assert refused.exit_code == 1, refused.output
    assert "not switched; the current index keeps serving" in refused.stdout
    done = runner.invoke(app, ["ops", "reindex", "--store", uri, "--probes", str(probes), "--floor",
                               "0", "--no-history"])
    assert done.exit_code == 0, done.output
    assert "switched" in done.stdout and "version 1 → 3" in done.stdout
    back = runner.invoke(app, ["ops", "rollback", "--store", uri, "--no-history"])
    assert back.exit_code == 0, back.output
    assert "previous index restored at version 1" in back.stdout
    again = runner.invoke(app, ["ops", "rollback", "--store", uri, "--no-history"])
    assert again.exit_code == 2 and again.stderr.startswith("Error: ")
    assert "no previous index to roll back" in again.stderr


def test_pgvector_view_readers_and_index_parameters(
        postgres_server: _servers.PostgresServer, pg_env: None) -> None:
    """What an application sees: its own connection reading the view ``NAME`` during the switch.
    A deliberately weak IVFFlat (200 lists, 1 probe) fails the floor and is not switched; the
    same table reopened with ``index=hnsw`` is reindexed to HNSW and switched."""
    import psycopg
    from pgvector.psycopg import register_vector

    from recallwatch.stores import open_store

    weak_uri = postgres_server.uri("viewkb", "index=ivfflat&lists=200&probes=1")
    store = open_store(weak_uri, create=True)
    assert isinstance(store, VersionedStore)
    chunks, vectors, queries = clustered()
    store.upsert(chunks, vectors)
    v1 = store.current_version()
    store.promote(v1)
    probes = ProbeSet("p", "1", vectors=queries)
    weak = reindex(store, probes, k=K, floor=0.9)
    assert not weak.switched and weak.recall_candidate < 0.9, weak
    assert store.production_version() == v1
    store.close()

    app_rows: list[int] = []
    app_tables: set[str] = set()
    app_errors: list[BaseException] = []
    stop = threading.Event()

    def application() -> None:
        with psycopg.connect(host="127.0.0.1", port=postgres_server.port, user="postgres",
                             dbname="postgres", autocommit=True) as conn:
            register_vector(conn)
            # the weak IVFFlat with one probe returns short answers of its own; probe it fully
            conn.execute("SET ivfflat.probes = 200")
            while not stop.is_set():
                try:
                    q = queries[len(app_rows) % len(queries)]
                    # one snapshot for both statements: which table the view named, and the answer
                    with conn.transaction():
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        found = conn.execute('SELECT id FROM "viewkb" ORDER BY embedding <=> %s '
                                             "LIMIT 10", [q]).fetchall()
                        view = conn.execute("SELECT pg_get_viewdef('viewkb')").fetchone()
                    app_rows.append(len(found))
                    app_tables.add("viewkb__v3" if view and "viewkb__v3" in view[0] else "v1")
                except Exception as exc:  # recorded, then asserted empty
                    app_errors.append(exc)

    strong = open_store(postgres_server.uri("viewkb", "index=hnsw"))
    thread = threading.Thread(target=application, daemon=True)
    thread.start()
    try:
        done = reindex(strong, probes, k=K, floor=0.9)
        time.sleep(0.2)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert app_errors == [] and app_rows and set(app_rows) == {K}
    assert app_tables == {"v1", "viewkb__v3"}  # it read production before and after the switch
    assert done.switched and done.recall_candidate >= 0.9 and done.version == "3"
    with psycopg.connect(host="127.0.0.1", port=postgres_server.port, user="postgres",
                         dbname="postgres", autocommit=True) as conn:
        view = conn.execute("SELECT pg_get_viewdef('viewkb')").fetchone()
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'viewkb__v3' "
                             "AND indexname = 'viewkb__v3_ann'").fetchone()
    assert view is not None and "viewkb__v3" in view[0]
    assert index is not None and "USING hnsw" in index[0]
    rollback(strong)
    assert strong.production_version() == v1
    strong.close()
