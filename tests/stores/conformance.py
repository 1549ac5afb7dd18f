"""The VectorStore conformance suite: what every adapter must do the same way.

Each ``check_*`` takes an :class:`Adapter` (how to open a fresh store, how to restart its server)
and asserts one part of the protocol against numpy brute force. ``test_conformance.py`` runs every
check on every adapter; a new adapter gets the whole suite by adding one ``Adapter``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import pytest

from recallwatch.errors import InputError, StoreError, UsageError
from recallwatch.stores import open_store
from recallwatch.stores._uri import redact
from recallwatch.stores.base import Chunk, VectorStore, update_meta

DIM = 16
N = 120
DOMAINS = ("legal", "finanzas", "rrhh", "procedimientos")


@dataclass
class Adapter:
    name: str
    uri: Callable[[str], str]  # collection/table name -> store URI
    restart: Callable[[], None] = field(default=lambda: None)  # restart the server, if any
    # what exists where the stores live (files, or the database's tables), to prove a read
    # creates nothing
    footprint: Callable[[], set[str]] = field(default=set)
    name_of: Callable[[str], str] = field(default=lambda t: t)  # the name the engine shows
    opened: list[VectorStore] = field(default_factory=list)

    def open(self, table: str = "kb", *, create: bool = True) -> VectorStore:
        """A store to write (created when missing), or with ``create=False`` one to read."""
        store = open_store(self.uri(table), create=create)
        self.opened.append(store)
        return store


def corpus(n: int = N, seed: int = 0, prefix: str = "c") -> tuple[list[Chunk], np.ndarray]:
    """Chunks with every field set or deliberately absent, and random unit-free vectors."""
    rng = np.random.default_rng(seed)
    chunks = [
        Chunk(
            id=f"{prefix}{i:04d}",
            text=f"representación {prefix}{i} ñ",
            content=None if i % 5 == 0 else f"contenido {i}",
            doc_id=f"doc{i // 4}",
            domain=DOMAINS[i % 4],
            label="SINTESIS_CURADA" if i % 7 == 0 else None,
            facets={"lang": "es", "n": str(i % 3)} if i % 2 else {},
            valid_from=date(2024, 1, 1 + i % 28) if i % 3 == 0 else None,
            valid_to=date(2026, 12, 31) if i % 6 == 0 else None,
            kind="table" if i % 3 == 1 else "text",
            description=f"tabla {i}" if i % 3 == 1 else None,
            content_hash=f"h{prefix}{i}",
        )
        for i in range(n)
    ]
    # Gaussian vectors, deliberately not normalised: the store must rank by cosine anyway.
    return chunks, (rng.normal(size=(n, DIM)) * rng.uniform(0.5, 2.0, size=(n, 1))).astype(
        np.float32)


def brute_force(
    chunks: list[Chunk], vectors: np.ndarray, queries: np.ndarray, k: int,
    keep: Callable[[Chunk], bool] = lambda c: True,
) -> list[tuple[list[str], np.ndarray]]:
    idx = [i for i, c in enumerate(chunks) if keep(c)]
    base = vectors[idx] / np.linalg.norm(vectors[idx], axis=1, keepdims=True)
    qs = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    scores = qs.astype(np.float64) @ base.T.astype(np.float64)
    out = []
    for row in scores:
        order = np.argsort(-row, kind="stable")[:k]
        out.append(([chunks[idx[j]].id for j in order], row[order]))
    return out


def _loaded(adapter: Adapter, table: str = "kb") -> tuple[VectorStore, list[Chunk], np.ndarray]:
    store = adapter.open(table)
    chunks, vectors = corpus()
    store.upsert(chunks[:70], vectors[:70])
    store.upsert(chunks[70:], vectors[70:])  # two batches: a store must accumulate them
    return store, chunks, vectors


def check_upsert_count_get(adapter: Adapter) -> None:
    store, chunks, _ = _loaded(adapter)
    assert store.count() == N
    got = store.get([c.id for c in chunks] + ["missing"])
    assert got == {c.id: c for c in chunks}  # every field round-trips, absent stays None
    assert store.get([]) == {}


def check_search_and_exact(adapter: Adapter) -> None:
    store, chunks, vectors = _loaded(adapter)
    queries = np.random.default_rng(7).normal(size=(15, DIM)).astype(np.float32)
    expected = brute_force(chunks, vectors, queries, 10)
    exact = store.search(queries, 10, exact=True)
    for hits, (ids, scores) in zip(exact, expected, strict=True):
        assert hits.ids == ids
        np.testing.assert_allclose(hits.scores, scores, atol=1e-5)
        assert hits.scores.dtype == np.float32
    ann = store.search(queries, 10)
    for hits, (ids, _) in zip(ann, expected, strict=True):
        assert len(hits.ids) == 10 and len(set(hits.ids)) == 10
        assert np.all(np.diff(hits.scores) <= 1e-6), "scores must be non-increasing"
        assert len(set(hits.ids) & set(ids)) >= 8  # 120 points: any sane ANN index is near-exact
    self_hits = store.search(vectors[:5], 1)
    assert [h.ids[0] for h in self_hits] == [c.id for c in chunks[:5]]
    np.testing.assert_allclose([h.scores[0] for h in self_hits], 1.0, atol=1e-5)
    # one query as a 1-D vector, and k larger than the store
    assert len(store.search(vectors[0], N + 50, exact=True)[0].ids) == N


def check_filters(adapter: Adapter) -> None:
    store, chunks, vectors = _loaded(adapter)
    queries = np.random.default_rng(8).normal(size=(6, DIM)).astype(np.float32)
    cases: list[tuple[dict[str, str | list[str]], Callable[[Chunk], bool]]] = [
        ({"domain": "legal"}, lambda c: c.domain == "legal"),
        ({"domain": ["rrhh", "finanzas"]}, lambda c: c.domain in ("rrhh", "finanzas")),
        ({"label": "SINTESIS_CURADA"}, lambda c: c.label == "SINTESIS_CURADA"),
        ({"kind": ["table"], "domain": "legal"},
         lambda c: c.kind == "table" and c.domain == "legal"),
        ({"doc_id": ["doc3", "doc4"]}, lambda c: c.doc_id in ("doc3", "doc4")),
    ]
    for flt, keep in cases:
        allowed = {c.id for c in chunks if keep(c)}
        for exact in (True, False):
            for hits in store.search(queries, 5, filter=flt, exact=exact):
                assert set(hits.ids) <= allowed, (flt, exact)
                assert len(hits.ids) == min(5, len(allowed)), (flt, exact)
        truth = brute_force(chunks, vectors, queries, 5, keep)
        for hits, (ids, scores) in zip(store.search(queries, 5, filter=flt, exact=True), truth,
                                       strict=True):
            assert hits.ids == ids, flt
            np.testing.assert_allclose(hits.scores, scores, atol=1e-5)
    with pytest.raises(UsageError, match="filterable fields are"):
        store.search(queries, 5, filter={"colour": "red"})


def check_score_of(adapter: Adapter) -> None:
    store, chunks, vectors = _loaded(adapter)
    queries = np.random.default_rng(9).normal(size=(3, DIM)).astype(np.float32)
    ask = [[chunks[0].id, chunks[50].id, "missing"], [], [chunks[119].id]]
    got = store.score_of(queries, ask)
    assert got[1] == {} and set(got[0]) == {chunks[0].id, chunks[50].id}
    assert store.score_of(queries[:2], [[], ["missing"]]) == [{}, {}]
    assert store.score_of(queries[:1], [[]]) == [{}]  # nothing to look up at all
    for q, row in zip(queries, got, strict=True):
        for cid, score in row.items():
            v = vectors[int(cid[1:])]
            want = float(q @ v / np.linalg.norm(q) / np.linalg.norm(v))
            assert score == pytest.approx(want, abs=1e-5)
    # score_of agrees with the score search gives the same chunk
    hits = store.search(queries[:1], 3, exact=True)[0]
    again = store.score_of(queries[:1], [hits.ids])[0]
    np.testing.assert_allclose([again[i] for i in hits.ids], hits.scores, atol=1e-5)


def check_delete_and_chunks(adapter: Adapter) -> None:
    store, chunks, vectors = _loaded(adapter)
    gone = [c.id for c in chunks[:10]]
    store.delete([*gone, "never-existed"])
    assert store.count() == N - 10
    assert store.get(gone) == {}
    hits = store.search(vectors[:10], 3, exact=True)
    assert not set(gone) & {i for h in hits for i in h.ids}
    by_doc = store.chunks(doc_ids=["doc5", "doc0"])
    assert [c.id for c in by_doc] == [c.id for c in chunks[10:] if c.doc_id in ("doc5", "doc0")]
    assert len(store.chunks()) == N - 10


def check_meta(adapter: Adapter) -> None:
    store = adapter.open()
    assert store.get_meta("embedder") is None
    value = {"name": "use-multilingual", "dimension": 512, "probe_hash": "ab" * 8, "ok": [1, 2.5]}
    store.set_meta("embedder", value)
    store.set_meta("note", "ñandú")
    assert store.get_meta("embedder") == value
    assert store.get_meta("note") == "ñandú"
    store.set_meta("note", None)
    assert store.get_meta("note") is None


def check_versions_and_switch(adapter: Adapter) -> None:
    store = adapter.open()
    chunks, vectors = corpus(60)
    store.upsert(chunks[:40], vectors[:40])
    v1 = store.current_version()
    assert v1 in [v.version for v in store.versions()]
    store.promote(v1)
    assert store.production_version() == v1
    # a promoted version is never modified in place: the next write lands in a newer version
    store.upsert(chunks[40:], vectors[40:])
    store.upsert(chunks[:1], vectors[:1])  # unchanged content: not "ingested since"
    v2 = store.current_version()
    assert v2 != v1 and store.production_version() == v1
    assert store.ids_since(v1) == sorted(c.id for c in chunks[40:])
    old = store.checkout(v1)
    assert old.count() == 40 and store.count() == 60
    assert old.get([chunks[50].id]) == {}
    with pytest.raises(StoreError):
        old.upsert(chunks[:1], vectors[:1])
    with pytest.raises(StoreError, match="no version"):
        store.checkout("999")
    store.promote(v2)
    assert store.production_version() == v2
    flags = {v.version: v.production for v in store.versions()}
    assert flags[v2] and not flags[v1]

    # atomic switch: readers always see one whole version, never an error or a mix
    sizes, errors = set(), []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                prod = store.production_version()
                assert prod is not None
                view = store.checkout(prod)
                sizes.add((view.count(), len(view.search(vectors[:1], 100, exact=True)[0].ids)))
            except Exception as exc:  # recorded, then asserted empty
                errors.append(exc)

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(10):
            store.promote(v1 if i % 2 == 0 else v2)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert errors == []
    assert sizes <= {(40, 40), (60, 60)} and sizes


def check_reopen_after_restart(adapter: Adapter) -> None:
    store, _, vectors = _loaded(adapter, "persist")
    store.set_meta("fingerprint", {"dim": DIM})
    version = store.current_version()
    store.promote(version)
    queries = vectors[:4] + 0.1
    before = store.search(queries, 5, exact=True)
    uri = store.uri
    store.close()
    adapter.opened.remove(store)
    adapter.restart()
    again = adapter.open("persist", create=False)  # reading what was written
    assert again.uri == uri
    assert again.count() == N
    assert again.production_version() == version == again.current_version()
    assert again.get_meta("fingerprint") == {"dim": DIM}
    after = again.search(queries, 5, exact=True)
    assert [h.ids for h in after] == [h.ids for h in before]
    np.testing.assert_allclose(np.stack([h.scores for h in after]),
                               np.stack([h.scores for h in before]), atol=1e-6)


def check_bad_input(adapter: Adapter) -> None:
    store, chunks, vectors = _loaded(adapter)
    with pytest.raises(InputError, match="dimension 16"):
        store.upsert(chunks[:2], np.zeros((2, DIM + 1), dtype=np.float32))
    with pytest.raises(InputError, match="2 rows"):
        store.upsert(chunks[:2], vectors[:3])
    with pytest.raises(InputError, match="dimension 16"):
        store.search(np.zeros((1, 3), dtype=np.float32), 5)
    with pytest.raises(UsageError, match="positive integer"):
        store.search(vectors[:1], 0)
    assert store.count() == N  # nothing half-written


def _close(adapter: Adapter, store: VectorStore) -> None:
    # Qdrant's local mode admits one client per directory at a time
    store.close()
    adapter.opened.remove(store)


def check_reading_never_creates(adapter: Adapter) -> None:
    # nothing there at all: the error names the store, and nothing is created by looking
    before = adapter.footprint()
    with pytest.raises(StoreError) as nothing:
        adapter.open("absent", create=False)
    assert str(nothing.value).startswith(f"{redact(adapter.uri('absent'))}: no ")
    assert adapter.footprint() == before
    # a store beside it: a misspelt name lists what exists and suggests the closest
    store, _, _ = _loaded(adapter, "chunks")
    _close(adapter, store)
    before = adapter.footprint()
    with pytest.raises(StoreError) as typo:
        adapter.open("chunk", create=False)
    message = str(typo.value)
    assert message.startswith(f"{redact(adapter.uri('chunk'))}: no ")
    assert f"(did you mean {adapter.name_of('chunks')!r}?)" in message
    assert adapter.footprint() == before
    # the store that exists opens to read; a store opened to write is created
    again = adapter.open("chunks", create=False)
    assert again.count() == N
    _close(adapter, again)
    fresh = adapter.open("fresh")
    fresh.upsert(*corpus(3))
    _close(adapter, fresh)
    assert adapter.open("fresh", create=False).count() == 3


def check_k_deeper_than_the_store(adapter: Adapter) -> None:
    # asking for more results than exist returns what exists; no depth reaches the engine raw
    store, chunks, vectors = _loaded(adapter)
    legal = sum(c.domain == "legal" for c in chunks)
    for k in (N + 1, 3_000_000_000, 10**11):
        for hits in store.search(vectors[:3], k, exact=True):
            assert len(hits.ids) == N
        for hits in store.search(vectors[:3], k):
            assert 0 < len(hits.ids) == len(set(hits.ids)) <= N
        for hits in store.search(vectors[:2], k, filter={"domain": "legal"}, exact=True):
            assert len(hits.ids) == legal
    _close(adapter, store)
    empty = adapter.open("empty")
    assert [h.ids for h in empty.search(vectors[:2], 3_000_000_000)] == [[], []]


def check_meta_updates_lose_nothing(adapter: Adapter) -> None:
    # concurrent read-modify-writes of one key (as an ingestion and a reindex may make) all land
    store = adapter.open()
    store.set_meta("counts", {"seed": 0})
    errors: list[BaseException] = []

    def updater(n: int) -> None:
        try:
            for i in range(8):
                update_meta(store, "counts",
                            lambda old, key=f"t{n}-{i}": {**(old or {}), key: n})
        except Exception as exc:  # recorded, then asserted empty
            errors.append(exc)

    threads = [threading.Thread(target=updater, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    store.upsert(*corpus(20))  # the store's own pointers change meanwhile (a first version)
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    counts = store.get_meta("counts")
    assert len(counts) == 1 + 6 * 8 and counts["t5-7"] == 5
    assert store.count() == 20
    assert update_meta(store, "counts", lambda old: None) is None  # None removes the key
    assert store.get_meta("counts") is None


CHECKS: dict[str, Callable[[Adapter], None]] = {
    name.removeprefix("check_"): fn for name, fn in globals().items() if name.startswith("check_")
}
