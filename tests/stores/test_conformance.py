"""Every conformance check on every adapter, against real engines (see conftest for the servers)."""

from __future__ import annotations

import functools
import importlib.util
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.errors import StoreError
from recallwatch.stores import open_store
from recallwatch.stores.base import (
    CAPABILITIES,
    SupportsContentHashes,
    SupportsIndexInspection,
    SupportsMetaUpdate,
    SupportsReindex,
    SupportsSeal,
    SupportsVectors,
    SupportsVectorScan,
)

from .conformance import CHECKS, Adapter
from .conftest import PostgresServer

ADAPTERS = ["pgvector", "qdrant-local", "milvus-lite", "chroma", "faiss", "hnswlib", "lancedb"]
# The module each adapter needs beyond recallwatch itself: a missing one is a genuine skip.
_NEEDS = {
    "pgvector": "psycopg", "qdrant-local": "qdrant_client", "milvus-lite": "milvus_lite",
    "chroma": "chromadb", "faiss": "faiss", "hnswlib": "hnswlib",
    "lancedb": "recallwatch.stores.lancedb",
}
_tables = itertools.count()


def _stop_milvus_lite(path: Path) -> None:
    # Milvus Lite runs a gRPC server per .db file inside this process; stop it for real.
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(path))


def _drop_chroma_clients() -> None:
    # Chroma caches one client system per path; dropping it makes the next open read from disk.
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


def _files(root: Path) -> Callable[[], set[str]]:
    """Every path under ``root``: what an embedded engine has created there."""
    return lambda: {str(p.relative_to(root)) for p in root.rglob("*")}


def _pg_relations(server: PostgresServer) -> Callable[[], set[str]]:
    """Every table, view, index and extension of the test database."""
    import psycopg

    from .conftest import PG_PASSWORD

    def footprint() -> set[str]:
        with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres",
                             dbname="postgres", password=PG_PASSWORD) as conn:
            rows = conn.execute("SELECT relname FROM pg_class WHERE relnamespace ="
                                " 'public'::regnamespace UNION SELECT 'extension ' || extname"
                                " FROM pg_extension").fetchall()
        return {str(r[0]) for r in rows}

    return footprint


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (or, for lancedb, the adapter has not landed)")


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapter]:
    name: str = request.param
    _need(_NEEDS[name])
    restart: Callable[[], None] = lambda: None  # noqa: E731 - embedded engines: reopen is the restart
    footprint = _files(tmp_path)
    name_of: Callable[[str], str] = lambda t: t  # noqa: E731
    if name == "pgvector":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        request.getfixturevalue("pg_env")
        prefix = f"t{next(_tables)}"
        uri: Callable[[str], str] = lambda t: server.uri(f"{prefix}_{t}")  # noqa: E731
        name_of = lambda t: f"{prefix}_{t}"  # noqa: E731
        restart = server.restart
        footprint = _pg_relations(server)
    elif name == "qdrant-local":
        uri = lambda t: f"qdrant+local://{tmp_path}/qdrant/{t}"  # noqa: E731
    elif name == "milvus-lite":
        uri = lambda t: f"milvus://{tmp_path}/milvus.db?collection={t}"  # noqa: E731
        restart = functools.partial(_stop_milvus_lite, tmp_path / "milvus.db")
        request.addfinalizer(restart)
    elif name == "chroma":
        uri = lambda t: f"chroma://{tmp_path}/chroma?collection={t}"  # noqa: E731
        restart = _drop_chroma_clients
        request.addfinalizer(restart)
    elif name in ("faiss", "hnswlib"):
        uri = lambda t: f"{name}://{tmp_path}/{t}"  # noqa: E731
    else:
        uri = lambda t: f"lancedb://{tmp_path}/lance?table={t}"  # noqa: E731
    handle = Adapter(name, uri, restart, footprint, name_of)
    yield handle
    for store in handle.opened:
        store.close()


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_conformance(adapter: Adapter, check: str) -> None:
    CHECKS[check](adapter)


@pytest.mark.parametrize("adapter", ADAPTERS, indirect=True)
def test_vectors_and_content_hashes(adapter: Adapter) -> None:
    # Not protocol methods: the monitor, ingestion and benchmarks use them where an adapter has
    # them, so every adapter, LanceDB included, must get them right.
    from .conformance import corpus

    store: Any = adapter.open()
    chunks, vectors = corpus(30)
    store.upsert(chunks, vectors)
    assert store.content_hashes() == {c.id: c.content_hash for c in chunks}
    ids = [chunks[7].id, chunks[2].id]
    got = store.vectors(ids)
    want = vectors[[7, 2]]
    cos = np.sum(got * want, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    np.testing.assert_allclose(cos, 1.0, atol=1e-5)  # same direction (Qdrant normalises)
    with pytest.raises(StoreError, match="no stored chunk nope"):
        store.vectors(["nope"])


@pytest.mark.parametrize("adapter", [a for a in ADAPTERS if a != "lancedb"], indirect=True)
def test_reingesting_unchanged_chunks_writes_nothing(adapter: Adapter) -> None:
    from .conformance import corpus

    store = adapter.open()
    chunks, vectors = corpus(30)
    store.upsert(chunks, vectors)
    v1 = store.current_version()
    store.promote(v1)
    store.upsert(chunks, vectors * 3.0)  # same fields, same direction: nothing to write
    assert store.current_version() == v1 and [v.version for v in store.versions()] == [v1]
    moved = vectors[:2] + 1.0  # a new vector, same content hash: written, version kept
    store.upsert(chunks[:2], moved)
    assert store.current_version() != v1
    assert store.ids_since(v1) == []
    assert store.score_of(moved[:1], [[chunks[0].id]])[0][chunks[0].id] == pytest.approx(1.0)


@pytest.mark.parametrize("adapter", ADAPTERS, indirect=True)
def test_declared_capabilities_work(adapter: Adapter) -> None:
    from .conformance import corpus

    # LanceDB builds its ANN index past index_threshold: low enough here to reindex one
    uri = adapter.uri("caps") + ("&index_threshold=64" if adapter.name == "lancedb" else "")
    store = open_store(uri, create=True)
    adapter.opened.append(store)
    chunks, vectors = corpus(120)
    store.upsert(chunks, vectors)
    caps = {c for c in CAPABILITIES if c in type(store).__mro__}
    assert caps == {c for c in CAPABILITIES if isinstance(store, c)}
    assert {SupportsVectors, SupportsContentHashes, SupportsMetaUpdate, SupportsReindex} <= caps
    if isinstance(store, SupportsVectors):
        got = store.vectors([chunks[3].id])
        assert got.shape == (1, vectors.shape[1]) and got.dtype == np.float32
    if isinstance(store, SupportsVectorScan):
        shards = list(store.scan_vectors(50))
        assert len(shards) >= 3 and all(0 < len(ids) <= 50 for ids, _ in shards)
        ids = [i for part, _ in shards for i in part]
        assert sorted(ids) == sorted(c.id for c in chunks)  # every row once
        assert np.concatenate([v for _, v in shards]).tobytes() == store.vectors(ids).tobytes()
        assert [i for part, _ in store.scan_vectors(50) for i in part] == ids  # a stable order
    if isinstance(store, SupportsContentHashes):
        assert store.content_hashes() == {c.id: c.content_hash for c in chunks}
    if isinstance(store, SupportsMetaUpdate):
        assert store.update_meta("n", lambda old: (old or 0) + 1) == 1
        assert store.update_meta("n", lambda old: old + 1) == 2 == store.get_meta("n")
    if isinstance(store, SupportsSeal):
        sealed = store.current_version()
        store.seal()
        store.upsert(chunks[:1], vectors[:1] + 1.0)  # a write after a seal: a new version
        assert store.current_version() != sealed and store.checkout(sealed).count() == 120
    if isinstance(store, SupportsIndexInspection):
        state = store.index_state()
        assert state is not None and state.uuids and store.index_problem() is None
        centroids = store.index_centroids()
        assert centroids is None or centroids.shape[1] == vectors.shape[1]
    if isinstance(store, SupportsReindex):
        store.promote(store.current_version())
        exact = [set(h.ids) for h in store.search(vectors[:5], 5, exact=True)]
        staged = store.stage_index()
        found = staged.candidate.search(vectors[:5], 5)  # the new index, before any switch
        assert all(len(set(h.ids) & e) >= 4 for h, e in zip(found, exact))  # 120 rows: near exact
        assert staged.content_check() is None
        done = staged.publish()
        staged.candidate.close()
        assert done.content_of == staged.built_on and done.previous is not None
        assert all(len(set(h.ids) & e) >= 4 for h, e in zip(store.search(vectors[:5], 5), exact))
        assert store.restore_index(done.previous, done.current) == store.current_version()
        assert store.content_hashes() == {c.id: c.content_hash for c in chunks}
