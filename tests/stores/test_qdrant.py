"""Qdrant beyond the conformance suite: the production alias, local-mode limits, unreachable
servers."""

from __future__ import annotations

import gc
import socket
from pathlib import Path

import numpy as np
import pytest

from recallwatch.errors import StoreError
from recallwatch.stores import open_store

from .conformance import corpus

pytest.importorskip("qdrant_client", reason="pip install 'recallwatch[qdrant]'")

from recallwatch.stores.qdrant import QdrantStore


def test_alias_follows_production(tmp_path: Path) -> None:
    store = QdrantStore(f"qdrant+local://{tmp_path}/q/kb", create=True)
    chunks, vectors = corpus(30)
    store.upsert(chunks[:10], vectors[:10])
    store.promote(store.current_version())
    store.upsert(chunks[10:], vectors[10:])
    v2 = store.current_version()

    def served() -> tuple[str, int]:
        alias = {a.alias_name: a.collection_name for a in store._client.get_aliases().aliases}
        return alias["kb"], store._client.count("kb", exact=True).count

    assert served() == ("kb__v1", 10)
    store.promote(v2)
    assert served() == ("kb__v2", 30)  # an application querying "kb" switched in one step
    store.close()


# qdrant-client leaves the lock file of the refused second client open (its bug, not ours).
@pytest.mark.filterwarnings("ignore:unclosed file:ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_local_storage_admits_one_client(tmp_path: Path) -> None:
    first = open_store(f"qdrant+local://{tmp_path}/q/kb", create=True)
    with pytest.raises(StoreError, match="cannot open Qdrant"):
        open_store(f"qdrant+local://{tmp_path}/q/kb")
    first.close()
    gc.collect()  # release the leaked handle while this test's filters apply


# qdrant-client rightly warns that a key over plain HTTP is exposed; this test server is fake.
@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection:UserWarning")
def test_unreachable_server_is_a_store_error_without_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("QDRANT_API_KEY", "qdrant-Key-123")
    with pytest.raises(StoreError, match="cannot reach Qdrant") as err:
        open_store(f"qdrant://127.0.0.1:{port}/kb", create=True)
    assert "qdrant-Key-123" not in str(err.value)


def test_local_mode_search_is_exact_either_way(tmp_path: Path) -> None:
    store = QdrantStore(f"qdrant+local://{tmp_path}/q/kb", create=True)
    chunks, vectors = corpus(200)
    store.upsert(chunks, vectors)
    q = np.random.default_rng(5).normal(size=(5, vectors.shape[1])).astype(np.float32)
    assert [h.ids for h in store.search(q, 10)] == [h.ids for h in store.search(q, 10, exact=True)]
    store.close()
