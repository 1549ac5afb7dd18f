"""Where a gate's ranked lists come from: a vector store searched with an embedder, or a results
file written by any external system. Both give, per query, the deep ranked list and the score of
every expected chunk (so the noise threshold always exists)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from recallwatch._blas import blas_threads
from recallwatch.embedders.base import (
    FINGERPRINT_META_KEY,
    Embedder,
    Fingerprint,
    check_fingerprint,
    fingerprint_of,
)
from recallwatch.errors import DatasetError, InputError
from recallwatch.formats.golden import GoldenQuery
from recallwatch.formats.policy import SearchSettings
from recallwatch.formats.results import RankedList
from recallwatch.stores.base import Chunk, Hits, SupportsAclFilter, SupportsIndexSize, VectorStore

__all__ = ["ResultsSource", "Retrieved", "Source", "StoreSource"]


@dataclass
class Retrieved:
    ids: list[str]  # rank order, as deep as the search went
    scores: np.ndarray  # float64, aligned with ids
    expected_scores: dict[str, float]  # every expected chunk the source can score


@dataclass
class Timings:
    embed: float = 0.0
    search: float = 0.0  # the ranked lists and the exact scores of expected chunks beyond them
    score: float = 0.0  # of which: the exact scores of expected chunks beyond the ranked lists
    # Seconds of each query's own search call (the cost of the run: its p50 and p99).
    search_each: list[float] = field(default_factory=list)
    embedded: int = 0  # queries embedded (embedding runs in one batch: time per query = mean)


# How many golden queries a run times one search call each (its latency p50 and p99).
LATENCY_QUERIES = 100


def latency_rows(n: int) -> list[int]:
    """The queries (positions) a run of ``n`` times one by one: all of them up to
    LATENCY_QUERIES, else that many spread evenly over the set, first and last included."""
    if n <= LATENCY_QUERIES:
        return list(range(n))
    return sorted({round(i * (n - 1) / (LATENCY_QUERIES - 1)) for i in range(LATENCY_QUERIES)})


class Source(Protocol):
    timings: Timings

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]: ...

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]: ...

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]: ...

    def describe(self) -> dict[str, Any]: ...

    def config(self) -> dict[str, Any]: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray | None: ...

    def index_bytes(self) -> int | None: ...


@dataclass
class StoreSource:
    """Pure vector search on the store's representation field, plus a written boost if any."""

    store: VectorStore
    embedder: Embedder
    settings: SearchSettings = field(default_factory=SearchSettings)
    timings: Timings = field(default_factory=Timings)
    _chunks: dict[str, Chunk] = field(default_factory=dict, init=False)
    _fingerprint: Fingerprint = field(init=False)
    _version: str = field(init=False)

    def __post_init__(self) -> None:
        self._fingerprint = fingerprint_of(self.embedder)
        built_with = self.store.get_meta(FINGERPRINT_META_KEY)
        if isinstance(built_with, dict):
            check_fingerprint(Fingerprint.from_dict(built_with), self._fingerprint,
                              index=self.store.uri)
        self._version = self.store.current_version()

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]:
        expected = list(dict.fromkeys(c for q in queries for c in q.expected))
        self.check_exists(queries, expected)
        t0 = time.perf_counter()
        vectors = np.asarray(self.embedder.embed_queries([q.text for q in queries]),
                             dtype=np.float32)
        t1 = time.perf_counter()
        # Exact rescoring is many small products: one BLAS thread each (see recallwatch._blas).
        with blas_threads(1):
            # The ranked lists in one call: a store batches what it can (LanceDB scans the rows
            # outside its index once per block of queries, not once per query).
            hits = self._search(vectors, [q.groups for q in queries], depth)
            # Latency as a user's query meets it: one call per query, on up to LATENCY_QUERIES
            # queries spread evenly over the set (their answers are the batch's).
            for row in latency_rows(len(vectors)):
                s0 = time.perf_counter()
                self._search(vectors[row:row + 1], [queries[row].groups], depth)
                self.timings.search_each.append(time.perf_counter() - s0)
            found = [set(h.ids) for h in hits]
            missing = [[c for c in q.expected if c not in ids] for q, ids in zip(queries, found)]
            t_score = time.perf_counter()
            # one call for every query: the store fetches each expected vector once
            extra_scores = self.store.score_of(vectors, missing)
        t2 = time.perf_counter()
        self.timings.embed += t1 - t0
        self.timings.embedded += len(queries)
        self.timings.search += t2 - t1
        self.timings.score += t2 - t_score
        out = []
        for q, h, extra in zip(queries, hits, extra_scores):
            ids, scores = list(h.ids), np.asarray(h.scores, dtype=np.float64)
            wanted = set(q.expected)
            exp_scores = {c: float(s) for c, s in zip(ids, scores) if c in wanted}
            exp_scores.update({c: float(s) for c, s in extra.items()})
            out.append(Retrieved(ids, scores, exp_scores))
        if self.settings.boost:
            out = [self._boost(r) for r in out]
        return out

    @property
    def acl_filter(self) -> str | None:
        """The store whose own acl filter serves queries that carry groups, or None."""
        return self.store.uri if isinstance(self.store, SupportsAclFilter) else None

    def _search(self, vectors: np.ndarray, groups: Sequence[tuple[str, ...] | None],
                depth: int) -> list[Hits]:
        """The store's search; a query carrying the asking user's groups is kept to what they
        may see by the store's own filter where it has one (queries grouped by their groups)."""
        flt = self.settings.filter or None
        store = self.store
        if not isinstance(store, SupportsAclFilter) or all(g is None for g in groups):
            return self.store.search(vectors, depth, filter=flt)
        rows: dict[tuple[str, ...] | None, list[int]] = {}
        for i, g in enumerate(groups):
            rows.setdefault(g, []).append(i)
        out: list[Hits | None] = [None] * len(groups)
        for g, at in rows.items():
            found = (self.store.search(vectors[at], depth, filter=flt) if g is None
                     else store.search_visible(vectors[at], depth, g, filter=flt))
            for i, h in zip(at, found):
                out[i] = h
        return [h for h in out if h is not None]

    def check_exists(self, queries: Sequence[GoldenQuery], expected: Sequence[str]) -> None:
        """An expected chunk the store does not hold is a dataset error, not a retrieval failure."""
        present = self.store.get(expected)
        self._chunks.update(present)  # the gate reads them again for Gold labels and diagnosis
        absent = [c for c in expected if c not in present]
        if absent:
            where = {c: [q.id for q in queries if c in q.expected] for c in absent}
            listing = "; ".join(
                f"{c} (query {', '.join(qs)})" for c, qs in list(where.items())[:10])
            more = f" and {len(absent) - 10} more" if len(absent) > 10 else ""
            raise DatasetError(
                f"{len(absent)} expected chunk id(s) do not exist in {self.store.uri}: "
                f"{listing}{more}",
                hint="fix the golden set or ingest the missing chunks; this is a dataset error, "
                "not a retrieval failure",
            )

    def _boost(self, r: Retrieved) -> Retrieved:
        meta = self.store.get(list(dict.fromkeys([*r.ids, *r.expected_scores])))

        def bonus(cid: str) -> float:
            chunk = meta.get(cid)
            if chunk is None:
                return 0.0
            total = 0.0
            for fld, table in self.settings.boost.items():
                value = getattr(chunk, fld, None) if fld != "facets" else None
                if value is None and fld not in ("label", "domain", "kind"):
                    value = chunk.facets.get(fld)
                total += table.get(str(value), 0.0) if value is not None else 0.0
            return total

        scores = r.scores + np.array([bonus(c) for c in r.ids], dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        return Retrieved([r.ids[i] for i in order], scores[order],
                         {c: s + bonus(c) for c, s in r.expected_scores.items()})

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        unknown = [c for c in ids if c not in self._chunks]
        if unknown:
            self._chunks.update(self.store.get(unknown))
        return {c: self._chunks[c] for c in ids if c in self._chunks}

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        return self.store.chunks(doc_ids=list(doc_ids)) if doc_ids else []

    def describe(self) -> dict[str, Any]:
        return {"uri": self.store.uri, "version": self._version, "count": self.store.count()}

    def config(self) -> dict[str, Any]:
        return {"source": "store", "embedder": self._fingerprint.to_dict(),
                "search": self.settings.to_dict()}

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        return np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float32)

    def index_bytes(self) -> int | None:
        """The ANN index's bytes where the store can say (``SupportsIndexSize``), else None."""
        return self.store.index_bytes() if isinstance(self.store, SupportsIndexSize) else None


@dataclass
class ResultsSource:
    """Ranked lists from an external system. Without a store, chunk metadata comes from an
    optional corpus; an expected chunk absent from a query's list scores at most the list's last
    score, which is all the noise rule needs (no top-K result can score below it)."""

    results: dict[str, RankedList]
    corpus: dict[str, Chunk] = field(default_factory=dict)
    source_name: str = "<results>"
    timings: Timings = field(default_factory=Timings)

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]:
        absent = [q.id for q in queries if q.id not in self.results]
        if absent:
            raise InputError(
                f"no results line for {len(absent)} golden "
                f"quer{'y' if len(absent) == 1 else 'ies'}:"
                f" {', '.join(absent[:10])}{' …' if len(absent) > 10 else ''}",
                source=self.source_name,
                hint='write {"query_id": ID, "results": []} for a query that returned nothing',
            )
        if self.corpus:
            expected = list(dict.fromkeys(c for q in queries for c in q.expected))
            missing = [c for c in expected if c not in self.corpus]
            if missing:
                raise DatasetError(f"{len(missing)} expected chunk id(s) are not in the corpus: "
                                   f"{', '.join(missing[:10])}")
        out = []
        for q in queries:
            ranked = self.results[q.id]
            ids, scores = ranked.ids[:depth], ranked.scores[:depth]
            wanted = set(q.expected)
            exp = {c: float(s) for c, s in zip(ids, scores) if c in wanted}
            out.append(Retrieved(list(ids), np.asarray(scores, dtype=np.float64), exp))
        return out

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        return {c: self.corpus[c] for c in ids if c in self.corpus}

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        wanted = set(doc_ids)
        return [c for c in self.corpus.values() if c.doc_id in wanted]

    def describe(self) -> dict[str, Any]:
        return {"results_file": self.source_name}

    def config(self) -> dict[str, Any]:
        return {"source": "results"}

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        return None

    def index_bytes(self) -> int | None:
        return None
