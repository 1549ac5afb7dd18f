"""What a retriever is: anything that answers queries with ranked chunk ids and scores.

A vector store searched with its embedder, BM25 over a corpus, a function or framework object in
the user's code, an HTTP search service: each is a :class:`Retriever`, so the gate, fusion and
experiments treat them alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from recallwatch.errors import RetrieverError
from recallwatch.records import Chunk

__all__ = ["Hit", "Retriever", "SupportsChunks", "check_hits"]

Hit = tuple[str, float]  # (chunk id, score); a higher score is a better match


@runtime_checkable
class Retriever(Protocol):
    name: str

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """One list per query, in rank order, ids unique within a query, at most ``k`` hits."""
        ...

    def describe(self) -> dict[str, Any]:
        """The configuration, to record and hash; never a secret."""
        ...


@runtime_checkable
class SupportsChunks(Protocol):
    """A retriever that can hand back its chunks (text and metadata) by id: a store, a corpus."""

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]: ...

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        """Every chunk of these documents (content anchors and the diagnosis read them)."""
        ...


def check_hits(raw: object, *, where: str, query: str, k: int) -> list[Hit]:
    """``raw`` as a clean ranked list: a sequence of (id, score) pairs with a non-empty string
    (or integer) id and a finite number as score; duplicates keep their first (best) rank; at
    most ``k``. Anything else is a :class:`RetrieverError` naming ``where``, the query and the
    bad item."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise RetrieverError(f"{where} answered query {_q(query)} with {_kind(raw)}: expected a "
                             "list of (chunk id, score) pairs")
    out: list[Hit] = []
    seen: set[str] = set()
    for n, item in enumerate(raw, 1):
        if (isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2):
            raise RetrieverError(f"{where} answered query {_q(query)}: item {n} is {_kind(item)}: "
                                 "expected a (chunk id, score) pair")
        cid, score = item
        if isinstance(cid, bool) or not isinstance(cid, (str, int)) or cid == "":
            raise RetrieverError(f"{where} answered query {_q(query)}: item {n} has chunk id "
                                 f"{cid!r}: expected a non-empty string")
        if isinstance(score, bool) or not isinstance(score, (int, float)) \
                or not math.isfinite(score):
            raise RetrieverError(f"{where} answered query {_q(query)}: item {n} (chunk {cid}) "
                                 f"has score {score!r}: expected a finite number")
        key = str(cid)
        if key not in seen:
            seen.add(key)
            out.append((key, float(score)))
    return out[:k]


def _q(query: str) -> str:
    return repr(query if len(query) <= 60 else query[:57] + "…")


def _kind(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '…'}"
