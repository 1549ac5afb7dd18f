"""Milvus Lite beyond the conformance suite: the production alias and client-side exactness."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conformance import corpus

pytest.importorskip("milvus_lite", reason="pip install 'recallwatch[milvus]'")

from recallwatch.stores.milvus import MilvusStore


@pytest.fixture
def db(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "m.db"
    yield path
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(path))


def test_alias_follows_production(db: Path) -> None:
    store = MilvusStore(f"milvus://{db}?collection=kb", create=True)
    chunks, vectors = corpus(30)
    store.upsert(chunks[:10], vectors[:10])
    store.promote(store.current_version())
    store.upsert(chunks[10:], vectors[10:])

    def served() -> tuple[str, int]:
        target = store._client.describe_alias("kb")["collection_name"]
        rows = store._client.query("kb", filter="", output_fields=["count(*)"])
        return target, int(rows[0]["count(*)"])

    assert served() == ("kb__v1", 10)
    store.promote(store.current_version())
    assert served() == ("kb__v2", 30)
    store.close()


def test_exact_search_is_computed_from_exported_vectors(db: Path) -> None:
    # Milvus has no per-query exact switch: the adapter says so, and exactness is still checked
    # against numpy by the conformance suite.
    assert MilvusStore.native_exact is False
