"""Recall of the live index against exact search, on probe vectors: what the monitor and the
reindex measure. Recall here is overlap with the exact top-k of the same store
(:func:`recallwatch.bench.exact_knn.id_recall`), not relevance."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from recallwatch._progress import tracked
from recallwatch.errors import InputError, StoreError, UsageError
from recallwatch.ops.probes import ProbeSet

if TYPE_CHECKING:
    from recallwatch.embedders.base import Fingerprint
    from recallwatch.stores.base import VectorStore

__all__ = ["ExactSearch", "probe_vectors", "recall_vs_exact", "store_exact"]

#: Exact top-k ids of each query vector among a store's rows: ``exact(store, vectors, k)``. The
#: default is the store's own (:func:`store_exact`); the Ray engine computes the same answer on a
#: cluster (:class:`recallwatch.scale.ray_exact_knn.RayExactSearch`).
ExactSearch = Callable[["VectorStore", np.ndarray, int], list[list[str]]]


def store_exact(store: VectorStore, vectors: np.ndarray, k: int) -> list[list[str]]:
    """The store's own exact search (``search(exact=True)``)."""
    return [h.ids for h in store.search(vectors, k, exact=True)]


def probe_vectors(probes: ProbeSet, store: VectorStore) -> tuple[np.ndarray, Fingerprint | None]:
    """The probes as query vectors, and the fingerprint of the embedder behind them.

    Text probes are embedded with the embedder that built the index (its spec and fingerprint
    are in the store's metadata, written at ingestion); vector probes are taken as they are, with
    the store's fingerprint."""
    from recallwatch.embedders.base import (
        FINGERPRINT_META_KEY,
        SPEC_META_KEY,
        Fingerprint,
        check_fingerprint,
        fingerprint_of,
    )

    stored = store.get_meta(FINGERPRINT_META_KEY)
    built_with = Fingerprint.from_dict(stored) if isinstance(stored, dict) else None
    if probes.vectors is not None:
        return probes.vectors, built_with
    spec = store.get_meta(SPEC_META_KEY)
    if not isinstance(spec, str):
        raise UsageError(f"{store.uri} does not record the embedder that built it (no "
                         f"{SPEC_META_KEY!r} in its metadata): give the probes as a .npy file of "
                         "query vectors instead of texts")
    from recallwatch.embedders import embedder_from_spec

    embedder = embedder_from_spec(spec)
    fp = fingerprint_of(embedder)
    check_fingerprint(built_with, fp, index=store.uri)
    vectors = np.asarray(embedder.embed_queries(list(probes.texts)), dtype=np.float32)
    return vectors, fp


def _warm_up(store: VectorStore, vectors: np.ndarray, k: int) -> None:
    """One untimed live search of the first probe (its failure, if any, is the timed call's to
    report)."""
    if len(vectors):
        with contextlib.suppress(StoreError):
            store.search(vectors[:1], k)


def recall_vs_exact(
    store: VectorStore, vectors: np.ndarray, k: int, *, exact_store: VectorStore | None = None,
    failures: list[str] | None = None, exact: ExactSearch | None = None, batched: bool = False,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Per probe: recall@k of ``store``'s live search against exact search (on ``exact_store``,
    default the same store, by ``exact``, default the store's own), the live latency in seconds,
    and the live result counts. With a ``failures`` list, a live search that fails (StoreError)
    counts as finding nothing and its message is added there; without, it is raised.

    The live search is one call per probe, so each probe's latency is its own; ``batched`` makes
    it one call for all of them (each probe's latency is then the mean): what a check that needs
    only the recall uses, since a store may scan its rows outside the index once per call.
    The first probe is searched once, untimed, before the timed calls: a process's first live
    search may open the engine (LanceDB's is imported then, a second or more) or a connection,
    which is not the search's latency. ``clock``: the timer (tests inject a fake one)."""
    from recallwatch.bench.exact_knn import id_recall

    if k < 1:
        raise InputError(field="k", expected="a positive integer", found=k)
    if not batched:
        _warm_up(store, vectors, k)
    live: list[list[str]] = []
    seconds = np.empty(len(vectors), dtype=np.float64)
    calls = [vectors] if batched else [row[None, :] for row in vectors]
    # timed: the bar is not redrawn while a probe's latency is measured
    shown = tracked(calls, len(calls), f"searching {store.uri}" + ("" if batched else
                                                                   ", one probe a call"),
                    timed=True)
    for i, rows in enumerate(shown):
        t0 = clock()
        try:
            live.extend(h.ids for h in store.search(rows, k))
        except StoreError as exc:
            if failures is None:
                raise
            failures.append(str(exc))
            live.extend([] for _ in range(len(rows)))
        seconds[i:i + len(rows)] = (clock() - t0) / max(len(rows), 1)
    truth = (exact or store_exact)(exact_store or store, vectors, k)
    vocab: dict[str, int] = {}
    # no wider than the longest answer: k may exceed the rows there are (the stores clamp it)
    width = max(1, max((len(ids) for ids in (*live, *truth)), default=0))

    def encode(rows: list[list[str]]) -> np.ndarray:
        out = np.full((len(rows), width), -1, dtype=np.int64)
        for r, ids in enumerate(rows):
            for c, cid in enumerate(ids[:width]):
                out[r, c] = vocab.setdefault(cid, len(vocab))
        return out

    recalls = id_recall(encode(live), encode(truth), k)
    return recalls, seconds, [len(ids) for ids in live]
