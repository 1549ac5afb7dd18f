"""Builders for gate tests: golden sets and ranked results written by hand, no store needed; and
a small LanceDB store of numbered chunks with random vectors, for the latency sample."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.results import RankedList

if TYPE_CHECKING:
    from recallwatch.stores.lancedb.store import LanceStore

DIM = 16


def random_vectors(texts: Sequence[str]) -> np.ndarray:
    """A unit vector per text, the same for the same text (a stand-in embedding)."""
    rows = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(DIM) for t in texts]
    out = np.asarray(rows, dtype=np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def numbered_store(path: Path, n: int) -> LanceStore:
    """A LanceDB store of chunks c000… with the text "chunk number i", embedded at random."""
    from recallwatch.stores.base import Chunk
    from recallwatch.stores.lancedb.store import LanceStore

    texts = [f"chunk number {i}" for i in range(n)]
    s = LanceStore(path, create=True)
    s.upsert([Chunk(id=f"c{i:03d}", text=t) for i, t in enumerate(texts)], random_vectors(texts))
    return s


def numbered_golden(n: int, top_k: int = 5) -> GoldenSet:
    """Queries q0… asking "chunk number i" and expecting chunk ci (found at rank 1)."""
    return GoldenSet.from_dict({"name": "g", "version": "1", "top_k": top_k, "queries": [
        {"id": f"q{i}", "text": f"chunk number {i}", "expected": [f"c{i:03d}"]}
        for i in range(n)]})


def golden(*queries: dict[str, Any], top_k: int = 10) -> GoldenSet:
    return GoldenSet.from_dict({"name": "t", "version": "1", "top_k": top_k,
                                "queries": list(queries)})


def ranked(placed: dict[str, int], n: int = 20, prefix: str = "other") -> RankedList:
    """A list of n results with strictly decreasing scores, ``placed`` ids at their 1-based ranks
    and filler ids elsewhere."""
    by_rank = {r: cid for cid, r in placed.items()}
    ids = [by_rank.get(r, f"{prefix}_{r:03d}") for r in range(1, n + 1)]
    scores = np.linspace(0.95, 0.95 - 0.01 * (n - 1), n)
    return RankedList(ids, scores)
