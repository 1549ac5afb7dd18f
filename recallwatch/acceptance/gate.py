"""The acceptance gate: golden set + source → per-query scores → policy → verdict → diagnosis.

    result = Gate(load_golden("golden.yaml"), policy).run(store_source(store, policy))
    result.verdict   # "ACCEPT" | "STOP"

Everything is computed in memory and returned whole: an interrupted run returns nothing and
records nothing. :func:`recallwatch.gate` (``acceptance/run.py``) opens the source, runs this,
and records and reports the result as ``recallwatch gate`` does.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

from recallwatch._hashing import canonical_hash
from recallwatch.acceptance.anchors import QueryAnchors, find_twins, resolve_queries
from recallwatch.acceptance.cost import measure_cost
from recallwatch.acceptance.diagnosis import (
    DiagnosisContext,
    diagnose,
    halves_similarity,
    patterns,
    shared_domains,
)
from recallwatch.acceptance.freshness import Dates, freshness_check, gate_freshness
from recallwatch.acceptance.golden_size import golden_size, size_warning
from recallwatch.acceptance.limits import check_measures, run_checks
from recallwatch.acceptance.model import (
    Aggregate,
    Check,
    GateResult,
    QueryResult,
    Reason,
    RunTimings,
    Verdict,
    excerpt,
)
from recallwatch.acceptance.noise import sparse_labels_check
from recallwatch.acceptance.permissions import apply_permissions, leak_diagnoses, permission_verdict
from recallwatch.acceptance.retrieve import (
    LatencyBaseline,
    ResultsSource,
    Retrieved,
    Source,
    StoreSource,
    ties_note,
)
from recallwatch.acceptance.score import score_queries
from recallwatch.acceptance.verdict import aggregate, decide
from recallwatch.embedders.base import Embedder
from recallwatch.errors import InputError, Interrupted, UsageError
from recallwatch.formats.golden import SPLITS, GoldenQuery, GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.formats.results import RankedList
from recallwatch.stores.base import Chunk, VectorStore

__all__ = ["FanOut", "FindBaseline", "Gate", "Part", "results_source", "run_gate", "select_part",
           "store_source"]

Part = Literal["auto", "tune", "test", "all"]
# Wraps the store's source so that retrieval runs elsewhere (the Ray engine), same answers.
FanOut = Callable[[StoreSource], Source]
# Finds the baseline run's index to time beside the candidate's: called with the open store, the
# golden set's hash and the policy's hash; None when there is none to reach.
FindBaseline = Callable[[VectorStore, str, str], LatencyBaseline | None]


def _new_run_id(now: datetime) -> str:
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class _Found:
    """What the search step hands on: the queries as scored (anchors settled, twins counted),
    their scores, and the expected chunks read."""

    queries: tuple[GoldenQuery, ...]
    anchors: QueryAnchors | None
    scored: list[QueryResult]
    chunks: dict[str, Chunk]
    # a warning when a list the user's system ordered holds ties in another order than the
    # measures' (see ties_note)
    tied: list[str]
    # whether the golden set has content anchors or groups of alternatives (then fact recall
    # and the groups are reported); ``anchors`` may be set for twins alone
    labelled: bool
    # whether the golden set's query domains are the corpus's (shared_domains): only then is a
    # chunk of another domain than its query's diagnosed as mislabelled
    domains_shared: bool


@dataclass(frozen=True)
class _Decision:
    verdict: Verdict
    reasons: list[Reason]
    checks: list[Check]
    cost: dict[str, Any] | None


@dataclass
class Gate:
    """A golden set and a policy, ready to examine any source."""

    golden: GoldenSet
    policy: Policy = field(default_factory=Policy)
    # validity windows are judged on this day (default: the golden set's as_of, else today, UTC)
    run_date: date | None = None
    # Which queries are scored: "auto" = the test part when the set has a tune/test split, else
    # all; "tune" (calibration runs), "test", or "all".
    part: Part = "auto"
    # (query id, chunk id) -> grade, from `recallwatch label`: the noise rule does not count a
    # result judged relevant, and can measure a query whose expected list is short.
    judgments: Mapping[tuple[str, str], int] | None = None

    def __post_init__(self) -> None:
        check_measures(self.policy)  # a misspelt measure fails before any search

    def run(self, source: Source) -> GateResult:
        start = time.perf_counter()
        try:
            return self._run(source, start)
        except KeyboardInterrupt:
            raise Interrupted("the gate was interrupted; no result was produced") from None

    def _run(self, source: Source, start: float) -> GateResult:
        now = datetime.now(UTC)
        queries, split = select_part(self.golden, self.part)
        found = self._search(source, queries)
        scored, texts, dates = self._read_shown(source, found)
        as_of = self.run_date or self.golden.as_of or now.date()
        scored = self._diagnose(source, found, scored, as_of)
        freshness = gate_freshness(scored, found.chunks, dates, source.siblings, as_of)
        agg = _aggregate(scored)
        decision = self._decide(source, scored, agg, freshness)
        # how the latency was sampled, to time a rerun alike; not part of the hash (it changes
        # no quality figure, so runs with other samples still compare)
        config = replace(source.config(), latency_sample=source.timings.sample)
        warnings = [*_gate_warnings(self.golden, self.policy, queries, scored, split),
                    *_twins_note(scored),
                    *([] if found.domains_shared else [_domains_note(scored, found.chunks)]),
                    *found.tied]
        total = time.perf_counter() - start
        embed, search = source.timings.embed, source.timings.search
        return GateResult(
            run_id=_new_run_id(now),
            created_at=now.isoformat(timespec="seconds"),
            verdict=decision.verdict,
            reasons=tuple(decision.reasons),
            aggregate=agg,
            queries=tuple(scored),
            patterns=tuple(patterns(scored)),
            dataset={"name": self.golden.name, "version": self.golden.version,
                     "hash": self.golden.hash, "source": self.golden.source or ""},
            dataset_hash=self.golden.hash,
            policy_hash=self.policy.hash,
            config_hash=canonical_hash(config.hashed()),
            config=config,
            policy=self.policy.rules_dict(),
            store=source.describe(),
            timings=RunTimings(embed, search, max(total - embed - search, 0.0), total),
            warnings=tuple(warnings),
            split=split,
            checks=tuple(decision.checks),
            cost=decision.cost,
            chunk_texts=texts,
            golden_size=golden_size(len(scored), self.policy),
            freshness=freshness,
        )

    def _search(self, source: Source, queries: tuple[GoldenQuery, ...]) -> _Found:
        """Each query's deep ranked list from ``source``, scored against the policy (see
        :meth:`_retrieve`). The deep lists are dropped once scored: they are the largest
        per-query data."""
        labelled = any(q.anchors or q.alternatives for q in queries)
        queries, retrieved, anchors = self._retrieve(source, queries, labelled)
        chunks = source.chunks(list(dict.fromkeys(c for q in queries for c in q.expected)))
        scored = score_queries(queries, retrieved, chunks, self.policy, self.golden.top_k,
                               self.judgments)
        shared = shared_domains([(q.domain, chunks[h.id].domain) for q in scored
                                 for h in q.expected if h.id in chunks])
        return _Found(queries, anchors, scored, chunks, ties_note(queries, retrieved),
                      labelled, shared)

    def _retrieve(self, source: Source, queries: Sequence[GoldenQuery], labelled: bool
                  ) -> tuple[tuple[GoldenQuery, ...], list[Retrieved], QueryAnchors | None]:
        """The deep ranked lists, and each query with the chunks it finally expects: content
        anchors resolved against the chunks now and groups of alternatives (``labelled``: the
        source scores every chunk they may stand for, then the best-ranked ones count), and an
        identical twin of an expected chunk in the top K counted in its place."""
        ks = [self.policy.top_k or q.top_k or self.golden.top_k for q in queries]
        depth = max(self.policy.search.depth, max(ks))
        anchors = resolve_queries(queries, source.siblings) if labelled else None
        asked = anchors.candidates(queries) if anchors is not None else list(queries)
        retrieved = source.retrieve(asked, depth)
        twins = (find_twins(asked, [r.ids for r in retrieved], ks, source.chunks)
                 if self.policy.twins_count_as_found else {})
        if anchors is None and twins:
            anchors = QueryAnchors()
        if anchors is None:
            return tuple(queries), retrieved, None
        anchors.twins = twins
        settled = tuple(anchors.settle(queries, [r.ids for r in retrieved]))
        _score_twins(settled, retrieved, anchors)
        return settled, retrieved, anchors

    def _read_shown(self, source: Source, found: _Found
                    ) -> tuple[list[QueryResult], dict[str, str], Dates]:
        """One read of every chunk the run shows, for its excerpt and its dates (freshness);
        whole only where fact recall reads the text or the permission check reads the chunks'
        acl (then not kept). Each query also says which expected chunks it found through an
        identical twin."""
        checks_acl = any(q.groups is not None for q in found.queries)
        shown, texts, dates = _shown_chunks(found.scored, source, found.chunks,
                                            whole=found.labelled or checks_acl)
        scored = apply_permissions(found.queries, found.scored, shown)
        anchors = found.anchors
        if anchors is not None and found.labelled:
            scored = _with_fact_recall(scored, found.queries, anchors, shown)
        if anchors is not None and anchors.swapped:
            scored = [replace(q, twins=anchors.twin_rows(q.id, {h.id: h.rank for h in q.expected}))
                      for q in scored]
        return scored, texts, dates

    def _diagnose(self, source: Source, found: _Found, scored: list[QueryResult],
                  run_date: date) -> list[QueryResult]:
        """Each failing query with its diagnosis: why each missing expected chunk is missing."""
        failing_ids = {h.id for q in scored if not q.passed for h in q.expected if not h.in_top_k}
        failing_chunks = [found.chunks[c] for c in failing_ids if c in found.chunks]
        doc_ids = sorted({c.doc_id for c in failing_chunks if c.doc_id})
        siblings: dict[str, list[Chunk]] = {}
        for c in source.siblings(doc_ids):
            siblings.setdefault(c.doc_id or "", []).append(c)
        anchors = found.anchors
        ctx = DiagnosisContext(
            chunks=found.chunks, siblings=siblings, run_date=run_date,
            settings=self.policy.search,
            halves_similarity=halves_similarity(failing_chunks, source.embed),
            splits=anchors.splits if anchors is not None else {},
            holders=anchors.holders if anchors is not None else {},
            domains_shared=found.domains_shared,
        )
        return [q if q.passed else replace(q, diagnosis=(*leak_diagnoses(q), *diagnose(q, ctx)))
                for q in scored]

    def _decide(self, source: Source, scored: list[QueryResult], agg: Aggregate,
                freshness: dict[str, Any]) -> _Decision:
        """The verdict: the policy's rules per query, then its run-level limits (cost, latency,
        permission leaks, freshness); any limit broken turns the verdict to STOP."""
        verdict, reasons = decide(scored, agg, self.policy)
        cost = measure_cost(source.timings, source.index_bytes())
        if cost is not None and isinstance(source, StoreSource):
            cost["vector_bytes"] = source.vector_bytes()  # what a search holds beside its index
        limit_reasons, checks = run_checks(scored, self.policy, cost)
        leak_reasons, leak_checks = permission_verdict(
            scored, source.acl_filter if isinstance(source, StoreSource) else None)
        fresh_reasons, fresh_checks = freshness_check(freshness,
                                                      self.policy.limits.min_freshness)
        limit_reasons = [*leak_reasons, *limit_reasons, *fresh_reasons]
        checks = [*leak_checks, *checks, *fresh_checks]
        if limit_reasons:
            verdict, reasons = "STOP", [*reasons, *limit_reasons]
        sparse = sparse_labels_check(scored, self.judgments is not None)
        if sparse is not None:
            checks.append(sparse)
        return _Decision(verdict, list(reasons), checks, cost)


def _aggregate(scored: list[QueryResult]) -> Aggregate:
    """The run's means, with how many queries the noise rule could not measure and, where the
    golden set has content anchors, the mean fact recall."""
    agg = replace(aggregate(scored), noise_unmeasured=sum(not q.noise_measured for q in scored))
    facts = [q.fact_recall for q in scored if q.fact_recall is not None]
    if facts:
        agg = replace(agg, mean_fact_recall=sum(facts) / len(facts))
    return agg


def _gate_warnings(golden: GoldenSet, policy: Policy, queries: Sequence[GoldenQuery],
                   scored: list[QueryResult], split: dict[str, int | str] | None) -> list[str]:
    """What the verdict's reader should know that is no rule: waivers of unknown queries,
    queries that can never pass, a set too small for its policy, generated queries, queries
    left out of the split."""
    warnings = []
    unknown_waivers = sorted(set(policy.waivers) - {q.id for q in golden.queries})
    if unknown_waivers:
        warnings.append(f"waivers name queries not in the golden set: "
                        f"{', '.join(unknown_waivers)}")
    warnings += _unreachable(scored, policy.recall_floor)
    too_small = size_warning(len(scored), policy)
    if too_small is not None:
        warnings.append(too_small)
    generated = sum(q.extra.get("source") == "generated" for q in queries)
    if generated:
        warnings.append(
            f"{generated} of {len(queries)} queries were written by a language model "
            "(`source: generated`), not by people: review them (keep, reword or delete) "
            "before relying on the verdict; `recallwatch history groups --by source --golden "
            "FILE` reports them apart")
    if split and split["unassigned"] and split["scored"] != "all":
        warnings.append(f"{split['unassigned']} queries have no split and are not scored: "
                        "`recallwatch golden split` assigns them")
    return warnings


def select_part(golden: GoldenSet, part: Part = "auto"
                ) -> tuple[tuple[GoldenQuery, ...], dict[str, int | str] | None]:
    """The queries a run scores, and the split's description for its result (None when the set
    has no split and all its queries are scored)."""
    if part not in ("auto", "tune", "test", "all"):
        raise UsageError(f"part must be auto, tune, test or all, not {part!r}")
    if not golden.has_split:
        if part in ("tune", "test"):
            raise InputError(source=golden.source, field="split",
                             expected=f"queries marked `split: {part}`", found="<no split>",
                             hint="`recallwatch golden split` assigns them")
        return golden.queries, None
    counts = {s: sum(q.split == s for q in golden.queries) for s in SPLITS}
    unassigned = len(golden.queries) - sum(counts.values())
    scored = "test" if part == "auto" else part
    if scored == "all":
        return golden.queries, {"scored": "all", **counts, "unassigned": unassigned}
    chosen = tuple(q for q in golden.queries if q.split == scored)
    if not chosen:
        raise InputError(source=golden.source, field="split",
                         expected=f"at least one query marked `split: {scored}`", found=0,
                         hint="`recallwatch golden split` assigns them")
    return chosen, {"scored": scored, **counts, "unassigned": unassigned}


def _with_fact_recall(scored: list[QueryResult], queries: Sequence[GoldenQuery],
                      anchors: QueryAnchors, texts: Mapping[str, Chunk]) -> list[QueryResult]:
    """Each query's anchor resolutions and fact recall@K (its quotes found in the top-K text),
    and what each of its groups of alternatives counted and found."""
    out = []
    for q, golden_q in zip(scored, queries):
        context = [texts[cid] for cid, _ in q.top if cid in texts]
        rows, fact_recall = anchors.report(golden_q, golden_q.expected, context)
        groups = anchors.group_rows(golden_q, [cid for cid, _ in q.top], context)
        out.append(replace(q, anchors=rows, fact_recall=fact_recall, alternatives=groups))
    return out



def _score_twins(queries: Sequence[GoldenQuery], retrieved: Sequence[Retrieved],
                 anchors: QueryAnchors) -> None:
    """Each twin counted in place of an expected chunk gets the score it was ranked with."""
    for q, r in zip(queries, retrieved):
        for twin in anchors.swapped.get(q.id, {}).values():
            r.expected_scores[twin] = float(r.scores[r.ids.index(twin)])


def _domains_note(scored: Sequence[QueryResult], chunks: Mapping[str, Chunk]) -> str:
    """Why no chunk is diagnosed as labelled with the wrong domain: the two sets of domains."""
    def some(names: set[str | None]) -> str:
        shown = sorted(n for n in names if n)
        return ", ".join(shown[:5]) + (" …" if len(shown) > 5 else "")

    held = some({c.domain for c in chunks.values()})
    return (f"the golden set's query domains ({some({q.domain for q in scored})}) are mostly "
            f"not the domains of the chunks they expect ({held}): they group the questions in "
            "their own way, so a "
            "chunk of another domain than its query's is not diagnosed as mislabelled (use the "
            "corpus's domains in the golden set to have it checked)")


def _twins_note(scored: Sequence[QueryResult]) -> list[str]:
    """One line naming the queries whose expected chunk was found through an identical twin."""
    rows = [(q.id, t) for q in scored for t in q.twins]
    if not rows:
        return []
    shown = "; ".join(f"{qid}: {t['expected']} → {t['found']} at rank {t['rank']}"
                      for qid, t in rows[:5])
    more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
    queries = len({qid for qid, _ in rows})
    return [f"{len(rows)} expected chunk(s) of {queries} quer{'y' if queries == 1 else 'ies'} "
            f"were found through an identical twin, a chunk with the same text under another "
            f"id ({shown}{more}): counted as found (policy twins_count_as_found; false counts "
            "only the chunk listed); remove the copies from the corpus or list both as "
            "{any: [A, B]}"]


# Chunks read at a time for their excerpts: a large run never holds every shown chunk whole.
_SHOWN_BATCH = 4096


def _shown_chunks(scored: list[QueryResult], source: Source, known: Mapping[str, Chunk],
                  *, whole: bool) -> tuple[dict[str, Chunk], dict[str, str], Dates]:
    """Every chunk the run shows (expected, top-K, beyond K), in that order, once each: the ones
    already read (``known``) and the rest in batches. Returns the chunks themselves when
    ``whole`` (their text gives fact recall), else {}; the excerpt a person decides from of
    each; and the validity dates of each dated one."""
    ids = list(dict.fromkeys(
        c for q in scored for c in [*(h.id for h in q.expected), *(c for c, _ in q.top),
                                    *(c for c, _ in q.beyond_k)]))
    chunks: dict[str, Chunk] = {}
    texts: dict[str, str] = {}
    dates: dict[str, tuple[date | None, date | None]] = {}
    for start in range(0, len(ids), _SHOWN_BATCH):
        part = ids[start:start + _SHOWN_BATCH]
        missing = [c for c in part if c not in known]
        read = {**(source.chunks(missing) if missing else {}),
                **{c: known[c] for c in part if c in known}}
        for c in part:
            if c in read:
                texts[c] = excerpt(read[c].text)
                if read[c].valid_from is not None or read[c].valid_to is not None:
                    dates[c] = (read[c].valid_from, read[c].valid_to)
                if whole:
                    chunks[c] = read[c]
    return chunks, texts, dates


def _unreachable(scored: list[QueryResult], floor: float) -> list[str]:
    """A warning for each query that expects more chunks than its top K holds: its recall is at
    most K / expected, and when that is under the floor it fails whatever the index does (its
    diagnosis then names a cause that is not the one)."""
    out = []
    for q in scored:
        n = len(q.expected)
        if n > q.top_k:
            best = q.top_k / n
            fate = ", so it can never pass: " if best < floor else ": "
            out.append(f"query {q.id} expects {n} chunks but only its top {q.top_k} are scored: "
                       f"its recall is at most {q.top_k}/{n} = {best:.3f} (floor {floor:g})"
                       f"{fate}raise its top_k (or the policy's) to at least {n}, or split it "
                       "into queries that each expect fewer chunks")
    return out


def store_source(store: VectorStore, policy: Policy, *, embedder: Embedder | None = None,
                 latency_sample: int | None = None,
                 baseline: LatencyBaseline | None = None) -> StoreSource:
    """A store as the gate's source, searched with ``embedder`` (default: the one that built
    it). ``latency_sample``: how many search calls are timed, one query each (0: none; None: as
    many as 10 % of the retrieval time allows, at most 100; when the policy judges cost, the 368
    a p99 needs within 10 s). ``baseline``: the baseline run's index, timed interleaved with the
    store's calls (``max_cost_increase`` then compares the two under the same load)."""
    if embedder is None:
        from recallwatch.embedders import embedder_for_store

        embedder = embedder_for_store(store)
    if latency_sample == 0 and policy.limits.max_latency_p99_ms is not None:
        raise UsageError(
            "a latency sample of 0 queries measures no search latency, and the policy caps "
            f"it (max_latency_p99_ms {policy.limits.max_latency_p99_ms:g}): time at least "
            "one query (latency_sample=N, or leave it out) or remove max_latency_p99_ms "
            "from the policy")
    limits = policy.limits
    judged = limits.max_cost_increase is not None or limits.max_latency_p99_ms is not None
    return StoreSource(store, embedder, policy.search, latency_sample=latency_sample,
                       judge_cost=judged, baseline=baseline)


def results_source(results: Mapping[str, RankedList], policy: Policy, *,
                   corpus: Mapping[str, Chunk] | None = None,
                   name: str | Path = "<results>",
                   golden_ids: frozenset[str] = frozenset()) -> ResultsSource:
    """Ranked lists from any other system as the gate's source; ``corpus`` (chunk id -> chunk)
    gives their metadata, for Gold labels, diagnosis and the policy's search.filter."""
    if policy.search.filter and not corpus:
        raise InputError(
            "a results file carries no chunk metadata, so search.filter cannot be applied",
            source=policy.source, line=policy.search_line, field="search.filter",
            hint="filter in the system that wrote the results and remove search.filter, or "
            "give corpus=FILE to check failures against the filter",
        )
    return ResultsSource(dict(results), dict(corpus or {}), str(name), golden_ids=golden_ids)


def run_gate(
    golden: GoldenSet,
    *,
    store: VectorStore | None = None,
    embedder: Embedder | None = None,
    results: Mapping[str, RankedList] | None = None,
    corpus: Mapping[str, Chunk] | None = None,
    policy: Policy | None = None,
    run_date: date | None = None,
    results_name: str | Path = "<results>",
    part: Part = "auto",
    fan_out: FanOut | None = None,
    latency_sample: int | None = None,
    judgments: Mapping[tuple[str, str], int] | None = None,
    latency_baseline: LatencyBaseline | None = None,
) -> GateResult:
    """The gate on an opened store or in-memory results, in memory: nothing recorded or
    written. Kept for existing scripts: :func:`recallwatch.gate` does this and everything
    ``recallwatch gate`` does (judged@K, the stale-set check, the history, the reports).
    ``fan_out`` wraps the store's source to retrieve elsewhere (the Ray engine);
    ``latency_baseline`` is the baseline run's index, timed beside the store's calls."""
    policy = policy or Policy()
    if (store is None) == (results is None):
        raise UsageError("give exactly one of store= or results=")
    source: Source
    if store is not None:
        local = store_source(store, policy, embedder=embedder, latency_sample=latency_sample,
                             baseline=latency_baseline if fan_out is None else None)
        source = local if fan_out is None else fan_out(local)
    else:
        source = results_source(results or {}, policy, corpus=corpus, name=results_name,
                                golden_ids=frozenset(q.id for q in golden.queries))
    return Gate(golden, policy, run_date, part, judgments).run(source)
