"""Where a gate's ranked lists come from: a vector store searched with an embedder, or a results
file written by any external system. Both give, per query, the deep ranked list and the score of
every expected chunk (so the noise threshold always exists)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from recallwatch._blas import blas_threads
from recallwatch._progress import in_blocks
from recallwatch._registry import listed, suggest
from recallwatch.acceptance.model import RunConfig
from recallwatch.embedders.base import (
    FINGERPRINT_META_KEY,
    Embedder,
    EmbeddingTokens,
    Fingerprint,
    check_fingerprint,
    fingerprint_of,
    query_tokens,
    reported_tokens,
)
from recallwatch.errors import DatasetError, InputError
from recallwatch.formats.golden import GoldenQuery
from recallwatch.formats.policy import SearchSettings
from recallwatch.formats.results import RankedList
from recallwatch.stores.base import (
    SEARCH_BLOCK,
    Chunk,
    Hits,
    SupportsAclFilter,
    SupportsIndexSize,
    VectorStore,
)
from recallwatch.vectors import measured_tie_order

__all__ = ["LatencyBaseline", "ResultsSource", "Retrieved", "Source", "StoreSource", "ties_note"]


@dataclass
class Retrieved:
    ids: list[str]  # rank order, as deep as the search went
    scores: np.ndarray  # float64, aligned with ids
    expected_scores: dict[str, float]  # every expected chunk the source can score

    def ties_as_measured(self) -> Retrieved:
        """This list with its exactly tied scores ordered as the measures (and `recallwatch
        eval`) order them: by id, descending (see :mod:`recallwatch.vectors`)."""
        order = measured_tie_order(self.ids, self.scores)
        if order is None:
            return self
        return Retrieved([self.ids[i] for i in order], self.scores[order], self.expected_scores)

    def ties_unlike_measured(self) -> bool:
        """Whether two results with exactly equal scores stand in another order than the
        measures' (then `eval` on a run file of this list ranks them otherwise)."""
        return measured_tie_order(self.ids, self.scores) is not None


@dataclass
class Timings:
    embed: float = 0.0
    # the ranked lists, the exact scores of expected chunks beyond them, the latency sample
    search: float = 0.0
    score: float = 0.0  # of which: the exact scores of expected chunks beyond the ranked lists
    # Seconds of each query's own search call (the cost of the run: its p50 and p99).
    search_each: list[float] = field(default_factory=list)
    embedded: int = 0  # queries embedded (embedding runs in one batch: time per query = mean)
    # The latency sample asked for: "auto" or a number of calls (recorded with the run).
    sample: str | int | None = None
    # When the policy judges cost: seconds of one query embedded alone, per call (the batch's
    # mean has no spread to judge an increase by).
    embed_each: list[float] = field(default_factory=list)
    # Seconds of the baseline index's search calls, timed interleaved with ``search_each`` (call
    # i of each on the same query, back to back): the load of the moment is shared.
    baseline_each: list[float] = field(default_factory=list)
    baseline: dict[str, Any] | None = None  # which baseline run and index version they timed
    timed_queries: int = 0  # distinct queries among the timed calls
    # The golden queries' tokens, as the embedder counted them (its tokenizer, or its
    # endpoint's usage); None when it does not tell.
    embed_tokens: EmbeddingTokens | None = None


# At most this many golden queries are timed one search call each (the latency p50 and p99).
LATENCY_QUERIES = 100
# By default the single-query calls take at most this share of the time already spent
# embedding and searching the whole set (one call on a store without an index scans every row,
# as the batched search of all the queries does once).
LATENCY_SHARE = 0.10
# When the policy judges cost (max_cost_increase, max_latency_p99_ms), the automatic sample aims
# at the calls a p99 needs (368: see recallwatch.stats.calls_needed), the golden queries taken
# again in rounds when the set is smaller, within this many seconds or LATENCY_SHARE of the
# retrieval, whichever is longer.
JUDGED_CALLS = 368
JUDGED_SECONDS = 10.0
# Queries embedded alone, one call each, when the policy judges cost: enough for the median's
# interval, few enough for an embedder billed per call.
EMBED_CALLS = 100


@dataclass(frozen=True)
class LatencyBaseline:
    """The baseline run's index, open, to time interleaved with the candidate's: ``run_id`` the
    accepted run it served, ``version`` the index version that run searched."""

    run_id: str
    version: str
    store: VectorStore
    owner: VectorStore | None = None  # the store opened to reach it, when not the candidate's

    def close(self) -> None:
        self.store.close()
        if self.owner is not None:
            self.owner.close()


def latency_rows(n: int, count: int = LATENCY_QUERIES) -> list[int]:
    """The queries (positions) a run of ``n`` times one by one: all of them up to ``count``,
    else that many spread evenly over the set, first and last included."""
    if count <= 0:
        return []
    if n <= count:
        return list(range(n))
    if count == 1:
        return [0]
    return sorted({round(i * (n - 1) / (count - 1)) for i in range(count)})


def call_order(n: int, count: int) -> list[int]:
    """The query (position) of each of ``count`` timed calls on a set of ``n``: spread over the
    set, and round after round over the same queries when ``count`` exceeds ``n`` (every prefix
    still covers the set)."""
    if n <= 0 or count <= 0:
        return []
    rows = latency_rows(n, min(n, count))
    order = [rows[i] for i in spread_order(len(rows))]
    return [order[i % len(order)] for i in range(count)]


def latency_budget_count(budget: float, first: float, cap: int = LATENCY_QUERIES) -> int:
    """How many single-query calls fit in ``budget`` seconds when one took ``first`` seconds:
    at least the one already timed, at most ``cap``."""
    if first <= 0:
        return cap
    return max(1, min(cap, int(budget / first)))


def spread_order(m: int) -> list[int]:
    """0..m-1 in an order whose every prefix is spread over the range (bit-reversed counting):
    a sample cut short by its time budget still covers the whole set."""
    bits = max(1, (m - 1).bit_length())
    return sorted(range(m), key=lambda i: int(f"{i:0{bits}b}"[::-1], 2))


def check_latency_sample(n: int | None) -> None:
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise InputError(field="latency_sample=",
                         expected="a number of search calls, 0 or more (0 skips the latency "
                         "sample)", found=n, hint="leave it out for the default (at most 100 "
                         "calls within 10 % of the retrieval time; 368 within 10 s when the "
                         "policy judges cost)")


class Source(Protocol):
    timings: Timings

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]: ...

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]: ...

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]: ...

    def describe(self) -> dict[str, Any]: ...

    def config(self) -> RunConfig: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray | None: ...

    def index_bytes(self) -> int | None: ...


def ties_note(queries: Sequence[GoldenQuery], retrieved: Sequence[Retrieved]) -> list[str]:
    """A warning when lists whose order is the user's system's (a results file, one `python:`
    or `http:` retriever) hold exact ties in another order than the measures': the gate scores
    them as returned, `recallwatch eval` on a run file of them would not."""
    unlike = [q.id for q, r in zip(queries, retrieved) if r.ties_unlike_measured()]
    if not unlike:
        return []
    n = len(unlike)
    listed = ", ".join(unlike[:5]) + (" …" if n > 5 else "")
    return [f"{n} quer{'y' if n == 1 else 'ies'} ({listed}) list{'s' if n == 1 else ''} "
            "results with exactly equal "
            "scores in another order than `recallwatch eval` ranks them (by id, descending, as "
            "trec_eval does): the gate scores the order your system returned, and a run file of "
            "the same results would give other RR, nDCG and AP values; give tied results "
            "distinct scores, in your order, to make both agree"]


def _absent(expected: Sequence[str], ids: Sequence[str]) -> list[str]:
    found = set(ids)
    return [c for c in expected if c not in found]


@dataclass
class StoreSource:
    """Pure vector search on the store's representation field, plus a written boost if any."""

    store: VectorStore
    embedder: Embedder
    settings: SearchSettings = field(default_factory=SearchSettings)
    timings: Timings = field(default_factory=Timings)
    # Search calls timed one query each: None = automatic (see LATENCY_SHARE), 0 = none.
    latency_sample: int | None = None
    # The policy judges cost: the automatic sample aims at a p99 (JUDGED_CALLS), and queries
    # are also embedded alone, one call each (EMBED_CALLS).
    judge_cost: bool = False
    # The baseline run's index, timed interleaved with this one's calls (None: not reachable).
    baseline: LatencyBaseline | None = None
    clock: Callable[[], float] = time.perf_counter  # the timer (tests inject a fake one)
    _chunks: dict[str, Chunk] = field(default_factory=dict, init=False)
    _fingerprint: Fingerprint = field(init=False)
    _version: str = field(init=False)

    def __post_init__(self) -> None:
        check_latency_sample(self.latency_sample)
        self._fingerprint = fingerprint_of(self.embedder)
        built_with = self.store.get_meta(FINGERPRINT_META_KEY)
        if isinstance(built_with, dict):
            check_fingerprint(Fingerprint.from_dict(built_with), self._fingerprint,
                              index=self.store.uri)
        self._version = self.store.current_version()

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]:
        expected = list(dict.fromkeys(c for q in queries for c in q.expected))
        self.check_exists(queries, expected)
        clock = self.clock
        t0 = clock()
        texts = [q.text for q in queries]
        before = reported_tokens(self.embedder)
        vectors = np.asarray(self.embedder.embed_queries(texts), dtype=np.float32)
        t1 = clock()
        tokens = query_tokens(self.embedder, texts, before)  # after the timing: not in it
        # Exact rescoring is many small products: one BLAS thread each (see recallwatch._blas).
        with blas_threads(1):
            # The ranked lists in one call: a store batches what it can (LanceDB scans the rows
            # outside its index once per block of queries, not once per query).
            hits = self._search(vectors, [q.groups for q in queries], depth)
            missing = [_absent(q.expected, h.ids) for q, h in zip(queries, hits)]
            t_score = clock()
            # one call for every query: the store fetches each expected vector once
            extra_scores = self.store.score_of(vectors, missing)
            t2 = clock()
            self._time_latency(vectors, texts, depth, budget=LATENCY_SHARE * (t2 - t0))
        t3 = clock()
        self.timings.embed += t1 - t0
        self.timings.embedded += len(queries)
        if tokens is not None:
            held = self.timings.embed_tokens
            self.timings.embed_tokens = tokens if held is None else held + tokens
        self.timings.search += t3 - t1
        self.timings.score += t2 - t_score
        out = []
        # one str per chunk id across the queries: deep lists overlap, and an id is 50-60 bytes
        # where a reference is 8
        canon: dict[str, str] = {}
        hits.reverse()  # taken from the end, so each query's answer is freed once copied
        for q, extra in zip(queries, extra_scores):
            h = hits.pop()
            ids = [canon.setdefault(c, c) for c in h.ids]
            scores = np.asarray(h.scores, dtype=np.float64)
            wanted = set(q.expected)
            exp_scores = {c: float(s) for c, s in zip(ids, scores) if c in wanted}
            exp_scores.update({c: float(s) for c, s in extra.items()})
            out.append(Retrieved(ids, scores, exp_scores))
        if self.settings.boost:
            out = [self._boost(r) for r in out]
        # the order among exact ties is the adapter's convention (smaller id first), not the
        # engine's: scored as the measures order ties, so `eval` of the same list agrees
        return [r.ties_as_measured() for r in out]

    def _time_latency(self, vectors: np.ndarray, texts: Sequence[str], depth: int,
                      budget: float) -> None:
        """Latency as a user's query meets it: one search call per query, on queries spread
        evenly over the set (their answers are the batch's). Automatic: as many calls as
        ``budget`` seconds allow, judged from the first call, at most LATENCY_QUERIES; when the
        policy judges cost, at most JUDGED_CALLS within JUDGED_SECONDS (or ``budget`` if
        longer), taking the queries again in rounds. With a baseline index, each call is paired
        with one on the baseline, back to back, their order alternating."""
        self.timings.sample = "auto" if self.latency_sample is None else self.latency_sample
        n, auto = len(vectors), self.latency_sample is None
        if n == 0 or self.latency_sample == 0:
            return
        if self.baseline is not None:
            self.timings.baseline = {"run_id": self.baseline.run_id,
                                     "version": self.baseline.version}
        if auto and self.judge_cost:
            budget = max(budget, JUDGED_SECONDS)
        spent = self._timed_call(vectors, texts, 0, depth, 0)  # position 0 opens every sample
        if not auto:
            count = self.latency_sample or 0
        elif self.judge_cost:  # the first call is often the slowest: time until the budget ends
            count = JUDGED_CALLS
        else:
            count = latency_budget_count(budget, spent)
        order = call_order(n, count)
        for i in range(1, len(order)):
            if auto and spent >= budget:
                break  # the first call's estimate was optimistic: keep to the budget
            spent += self._timed_call(vectors, texts, order[i], depth, i)
        self.timings.timed_queries = len(set(order[:len(self.timings.search_each)]))

    def _timed_call(self, vectors: np.ndarray, texts: Sequence[str], row: int, depth: int,
                    i: int) -> float:
        """Call ``i`` of the sample, on query ``row``: its search (and, when cost is judged, its
        embedding alone; with a baseline, the baseline's search beside it). The seconds spent."""
        clock, filt = self.clock, self.settings.filter or None
        s0 = clock()
        if self.judge_cost and i < EMBED_CALLS:
            self.embedder.embed_queries([texts[row]])
            s1 = clock()
            self.timings.embed_each.append(s1 - s0)
            s0 = s1
        stores = [self.store]
        if self.baseline is not None:
            stores = [self.baseline.store, self.store] if i % 2 else [self.store,
                                                                     self.baseline.store]
        for store in stores:
            c0 = clock()
            store.search(vectors[row:row + 1], depth, filter=filt)
            took = clock() - c0
            (self.timings.search_each if store is self.store
             else self.timings.baseline_each).append(took)
        return clock() - s0

    @property
    def acl_filter(self) -> str | None:
        """The store whose own acl filter serves queries that carry groups, or None."""
        return self.store.uri if isinstance(self.store, SupportsAclFilter) else None

    def _search(self, vectors: np.ndarray, groups: Sequence[tuple[str, ...] | None],
                depth: int) -> list[Hits]:
        """The store's search, ``SEARCH_BLOCK`` queries a call (a progress bar on a terminal
        counts them)."""
        n = len(vectors)
        return in_blocks(n, SEARCH_BLOCK, f"searching {self.store.uri} ({n:,} queries)",
                         lambda a, b: self._search_block(vectors[a:b], groups[a:b], depth))

    def _search_block(self, vectors: np.ndarray, groups: Sequence[tuple[str, ...] | None],
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
                hint="fix the golden set or ingest the missing chunks; after a re-chunking, "
                "which renames chunks, rewrite the ids as content anchors (quotes of the "
                "passages, found wherever they move) with recallwatch golden migrate GOLDEN "
                "--from OLD_CORPUS --to NEW_CORPUS; this is a dataset error, not a retrieval "
                "failure",
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

    def config(self) -> RunConfig:
        return RunConfig("store", embedder=self._fingerprint.to_dict(),
                         search=self.settings.to_dict())

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        return np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float32)

    def index_bytes(self) -> int | None:
        """The ANN index's bytes where the store can say (``SupportsIndexSize``), else None."""
        return self.store.index_bytes() if isinstance(self.store, SupportsIndexSize) else None

    def vector_bytes(self) -> int:
        """The stored vectors' bytes: rows × dimensions × 4 (every adapter stores float32)."""
        return self.store.count() * self._fingerprint.dimension * 4


@dataclass
class ResultsSource:
    """Ranked lists from an external system. Without a store, chunk metadata comes from an
    optional corpus; an expected chunk absent from a query's list scores at most the list's last
    score, which is all the noise rule needs (no top-K result can score below it)."""

    results: dict[str, RankedList]
    corpus: dict[str, Chunk] = field(default_factory=dict)
    source_name: str = "<results>"
    timings: Timings = field(default_factory=Timings)
    # every query id of the golden set (its other split part too): a results line for another
    # id is named when a golden query has none (a typo, or a line of another golden set)
    golden_ids: frozenset[str] = frozenset()

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]:
        absent = [q.id for q in queries if q.id not in self.results]
        if absent:
            raise self._absent(absent, self.golden_ids or {q.id for q in queries})
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

    def _absent(self, absent: list[str], golden: Collection[str]) -> InputError:
        unknown = [qid for qid in self.results if qid not in golden]
        named = ""
        if unknown:
            named = ("; its lines for query ids the golden set does not have: "
                     + listed([f"{qid!r}{suggest(qid, absent)}" for qid in unknown], 10))
        return InputError(
            f"no results line for {len(absent)} golden "
            f"quer{'y' if len(absent) == 1 else 'ies'}: {listed(absent, 10)}{named}",
            source=self.source_name,
            hint='write {"query_id": ID, "results": []} for a query that returned nothing'
            + (", and give each line the id of its golden query" if unknown else ""))

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        return {c: self.corpus[c] for c in ids if c in self.corpus}

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        wanted = set(doc_ids)
        return [c for c in self.corpus.values() if c.doc_id in wanted]

    def describe(self) -> dict[str, Any]:
        return {"results_file": self.source_name}

    def config(self) -> RunConfig:
        return RunConfig("results")

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        return None

    def index_bytes(self) -> int | None:
        return None
