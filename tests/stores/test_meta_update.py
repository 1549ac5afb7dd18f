"""One locked read-modify-write for store metadata: concurrent updaters in separate processes
(each with its own store object, as an ingestion and a reindex run side by side) lose no key.
Threads within one process are checked on every adapter by the conformance suite."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from recallwatch.stores import open_store
from recallwatch.stores._meta import MetaFile, file_lock
from recallwatch.stores.base import update_meta

from .conftest import PostgresServer

PROCESSES, UPDATES = 4, 15


def _update_through_store(uri: str, worker: int) -> None:
    store = open_store(uri)
    for i in range(UPDATES):
        update_meta(store, "counts", lambda old, key=f"p{worker}-{i}": {**(old or {}), key: 1})
    store.close()


def _update_file(path: str, worker: int) -> None:
    meta = MetaFile(Path(path))
    for i in range(UPDATES):
        meta.update("counts", lambda old, key=f"p{worker}-{i}": {**(old or {}), key: 1})


def _run(target: object, arg: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=(arg, n))  # type: ignore[attr-defined]
             for n in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * PROCESSES


def test_meta_file_updates_from_processes_lose_no_key(tmp_path: Path) -> None:
    path = tmp_path / "store" / "t.meta.json"
    _run(_update_file, str(path))
    assert len(MetaFile(path).get("counts")) == PROCESSES * UPDATES


def test_the_file_lock_is_reentrant_for_every_holder_in_a_thread(tmp_path: Path) -> None:
    a, b = MetaFile(tmp_path / "m.json"), MetaFile(tmp_path / "m.json")
    with a.locked(), b.locked(), file_lock(tmp_path / "m.lock"):
        a.set("x", 1)  # takes the lock again inside: must not wait for itself
        b.update("x", lambda old: old + 1)
    assert a.get("x") == 2


@pytest.mark.parametrize("scheme", ["lancedb", "faiss", "chroma"])
def test_store_meta_updates_from_processes_lose_no_key(tmp_path: Path, scheme: str) -> None:
    pytest.importorskip({"lancedb": "lancedb", "faiss": "faiss", "chroma": "chromadb"}[scheme])
    uri = {"lancedb": f"lancedb://{tmp_path}/kb?table=t", "faiss": f"faiss://{tmp_path}/idx",
           "chroma": f"chroma://{tmp_path}/chroma?collection=kb"}[scheme]
    from .conformance import corpus

    store = open_store(uri, create=True)
    store.upsert(*corpus(5))
    store.close()
    _run(_update_through_store, uri)
    assert len(open_store(uri).get_meta("counts")) == PROCESSES * UPDATES


def test_pgvector_meta_updates_from_processes_lose_no_key(
        postgres_server: PostgresServer, pg_env: None) -> None:
    uri = postgres_server.uri("metaprocs")
    open_store(uri, create=True).close()
    _run(_update_through_store, uri)
    store = open_store(uri)
    assert len(store.get_meta("counts")) == PROCESSES * UPDATES
    store.close()
