"""Chroma's documented limits: no exact search (ground truth from exported vectors) and no
aliases (production is recallwatch's own pointer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .conformance import brute_force, corpus

pytest.importorskip("chromadb", reason="pip install 'recallwatch[chroma]'")

from recallwatch.stores.chroma import ChromaStore


def test_exact_comes_from_exported_vectors(tmp_path: Path) -> None:
    assert ChromaStore.native_exact is False
    store = ChromaStore(f"chroma://{tmp_path}/c?collection=kb", create=True)
    chunks, vectors = corpus(300)
    store.upsert(chunks, vectors)
    q = np.random.default_rng(6).normal(size=(10, vectors.shape[1])).astype(np.float32)
    truth = brute_force(chunks, vectors, q, 10)
    exported = store._exact_by_export(store._table(), q, 10, None)
    assert [ids for ids, _ in exported] == [ids for ids, _ in truth]
    assert [h.ids for h in store.search(q, 10, exact=True)] == [ids for ids, _ in truth]


def test_production_is_a_pointer_not_a_collection(tmp_path: Path) -> None:
    store = ChromaStore(f"chroma://{tmp_path}/c?collection=kb", create=True)
    chunks, vectors = corpus(20)
    store.upsert(chunks[:10], vectors[:10])
    store.promote(store.current_version())
    store.upsert(chunks[10:], vectors[10:])
    store.promote(store.current_version())
    names = {c.name for c in store._client.list_collections()}
    assert "kb" not in names  # nothing an application could query by the bare name
    assert {"kb__v1", "kb__v2", "kb__meta"} <= names
    assert store.production_version() == "2"
    assert ChromaStore(f"chroma://{tmp_path}/c?collection=kb").production_version() == "2"
