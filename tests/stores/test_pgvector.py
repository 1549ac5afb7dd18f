"""pgvector beyond the conformance suite: exactness that survives prepared statements, iterative
scans under selective filters, IVFFlat, and the production view an application reads."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

from recallwatch.stores.base import Chunk

from .conformance import brute_force
from .conftest import PostgresServer

pytest.importorskip("psycopg", reason="pip install 'recallwatch[pgvector]'")

from recallwatch.stores.pgvector import PgVectorStore

_names = itertools.count()
_open: list[PgVectorStore] = []


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def _store(server: PostgresServer, query: str = "") -> PgVectorStore:
    store = PgVectorStore(server.uri(f"pg{next(_names)}", query), create=True)
    _open.append(store)
    return store


def _data(n: int, dim: int, seed: int = 1) -> tuple[list[Chunk], np.ndarray]:
    rng = np.random.default_rng(seed)
    chunks = [Chunk(id=f"d{i:05d}", text=f"t{i}", domain="rare" if i % 100 == 0 else "common",
                    content_hash=f"h{i}") for i in range(n)]
    return chunks, rng.normal(size=(n, dim)).astype(np.float32)


@pytest.mark.usefixtures("pg_env")
def test_exact_bypasses_the_index_even_once_statements_are_prepared(
    postgres_server: PostgresServer,
) -> None:
    # A deliberately poor graph (m=4, ef_construction=8, ef_search=1) so that ANN answers differ
    # from the truth: only then does "equal to brute force" prove the index was bypassed.
    store = _store(postgres_server, "m=4&ef_construction=8&ef_search=1")
    chunks, vectors = _data(3000, 32)
    store.upsert(chunks, vectors)
    queries = np.random.default_rng(2).normal(size=(20, 32)).astype(np.float32)
    truth = brute_force(chunks, vectors, queries, 10)
    ann = store.search(queries, 10)
    assert any(h.ids != ids for h, (ids, _) in zip(ann, truth, strict=True)), \
        "the HNSW index happens to be exact here; the test would prove nothing"
    # psycopg prepares a statement after prepare_threshold (5) executions: run past it.
    assert store._conn.prepare_threshold is not None and store._conn.prepare_threshold < 8
    for _ in range(8):
        for hits, (ids, scores) in zip(store.search(queries, 10, exact=True), truth, strict=True):
            assert hits.ids == ids
            np.testing.assert_allclose(hits.scores, scores, atol=1e-5)
    table = store._table()
    q = queries[0]
    ann_plan = "\n".join(r[0] for r in store._conn.execute(
        f'EXPLAIN SELECT id FROM "{table}" ORDER BY embedding <=> %s LIMIT 10', [q]).fetchall())
    assert f"{table}_ann" in ann_plan  # the index exists and the ANN path uses it
    # Even with sequential scans discouraged, the exact query has no index it could use.
    store._conn.execute("SET enable_seqscan = off")
    exact_plan = "\n".join(r[0] for r in store._conn.execute(
        b"EXPLAIN " + store.exact_sql(table, None, 10).as_bytes(store._conn), [q, q]).fetchall())
    store._conn.execute("RESET enable_seqscan")
    assert "Seq Scan" in exact_plan and "_ann" not in exact_plan, exact_plan


@pytest.mark.usefixtures("pg_env")
def test_selective_filter_still_returns_k_rows_through_iterative_scan(
    postgres_server: PostgresServer,
) -> None:
    store = _store(postgres_server, "ef_search=10")
    chunks, vectors = _data(3000, 16)  # 30 "rare" rows: 1 %
    store.upsert(chunks, vectors)
    rare = [c for c in chunks if c.domain == "rare"]
    queries = np.random.default_rng(3).normal(size=(5, 16)).astype(np.float32)
    for hits in store.search(queries, 10, filter={"domain": "rare"}):
        # Without iterative scan HNSW yields ef_search=10 candidates, ~0 of them rare.
        assert len(hits.ids) == 10
        assert set(hits.ids) <= {c.id for c in rare}
    # the same query without iterative scan comes back short: the setting is what saves it
    with store._conn.transaction():
        store._conn.execute("SET LOCAL hnsw.ef_search = 10")
        store._conn.execute("SET LOCAL hnsw.iterative_scan = off")
        store._conn.execute("SET LOCAL enable_seqscan = off")  # make the planner use HNSW
        plain = store._conn.execute(
            f'SELECT id FROM "{store._table()}" WHERE domain = %s'
            " ORDER BY embedding <=> %s LIMIT 10", ["rare", queries[0]]).fetchall()
    assert len(plain) < 10


@pytest.mark.usefixtures("pg_env")
def test_ivfflat_index_is_built_and_exact_search_still_exact(
    postgres_server: PostgresServer,
) -> None:
    store = _store(postgres_server, "index=ivfflat&lists=20&probes=2")
    chunks, vectors = _data(2000, 16)
    store.upsert(chunks, vectors)
    queries = np.random.default_rng(4).normal(size=(10, 16)).astype(np.float32)
    truth = brute_force(chunks, vectors, queries, 5)
    assert [h.ids for h in store.search(queries, 5, exact=True)] == [ids for ids, _ in truth]
    ann = store.search(queries, 5)
    assert all(len(h.ids) == 5 for h in ann)
    assert store._has_ann_index(store._table())  # trained on the 2,000 rows present
    store.build_index()  # a reindex retrains the centroids in place
    assert store._has_ann_index(store._table())


@pytest.mark.usefixtures("pg_env")
def test_the_bare_table_name_is_a_view_of_production(postgres_server: PostgresServer) -> None:
    store = _store(postgres_server)
    chunks, vectors = _data(30, 8)
    store.upsert(chunks[:20], vectors[:20])
    v1 = store.current_version()
    store.promote(v1)
    store.upsert(chunks[20:], vectors[20:])
    v2 = store.current_version()

    def served() -> int:
        row = store._conn.execute(f'SELECT count(*) FROM "{store.name}"').fetchone()
        assert row is not None
        return int(row[0])

    assert served() == 20
    store.promote(v2)
    assert served() == 30
    store.promote(v1)  # rollback is the same atomic switch
    assert served() == 20


def test_bad_uri_parameters_are_usage_errors(postgres_server: PostgresServer) -> None:
    from recallwatch.errors import UsageError

    with pytest.raises(UsageError, match="index must be hnsw, ivfflat or none"):
        PgVectorStore(postgres_server.uri("x", "index=diskann"))
    with pytest.raises(UsageError, match="m must be a positive integer"):
        PgVectorStore(postgres_server.uri("x", "m=0"))
    with pytest.raises(UsageError, match="table name 'a__b' is invalid"):
        PgVectorStore(postgres_server.uri("a__b"))


@pytest.mark.usefixtures("pg_env")
def test_a_lost_connection_is_a_store_error(postgres_server: PostgresServer) -> None:
    from recallwatch.errors import StoreError

    store = _store(postgres_server)
    assert store.count() == 0
    postgres_server.restart()  # the server drops every session
    with pytest.raises(StoreError, match=r"count failed: .*(terminat|closed|connection)"):
        store.count()
    assert _store(postgres_server).count() == 0  # a fresh open works again


@pytest.mark.usefixtures("pg_env")
def test_large_writes_defer_the_index_to_one_bulk_build(postgres_server: PostgresServer) -> None:
    store = _store(postgres_server)
    chunks, vectors = _data(1500, 8)
    store.upsert(chunks[:1200], vectors[:1200])  # bulk: no row-by-row HNSW inserts
    table = store._table()
    assert not store._has_ann_index(table)
    store.search(vectors[:1], 5)  # the first ANN query builds it once
    assert store._has_ann_index(table)
    store.upsert(chunks[1200:], vectors[1200:])  # a small write maintains it in place
    assert store._has_ann_index(table)
    store.upsert(chunks[:1200], vectors[:1200] + 1)  # a large rewrite drops it again
    assert not store._has_ann_index(table)
    store.promote(store.current_version())  # production is never served without its index
    assert store._has_ann_index(table)
