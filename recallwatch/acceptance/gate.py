"""The acceptance gate: golden set + source → per-query scores → policy → verdict → diagnosis.

    result = run_gate(load_golden("golden.yaml"), store=open_store(uri), embedder=get_embedder())
    result.verdict   # "ACCEPT" | "STOP"

Everything is computed in memory and returned whole: an interrupted run returns nothing and
records nothing (the CLI writes reports and history only from a complete result).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

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
from recallwatch.acceptance.limits import check_measures, run_checks
from recallwatch.acceptance.model import GateResult, QueryResult, excerpt
from recallwatch.acceptance.noise import sparse_labels_check
from recallwatch.acceptance.permissions import apply_permissions, leak_diagnoses, permission_verdict
from recallwatch.acceptance.retrieve import (
    ResultsSource,
    Retrieved,
    Source,
    StoreSource,
    check_latency_sample,
    ties_note,
)
from recallwatch.acceptance.score import score_queries
from recallwatch.acceptance.verdict import aggregate, decide
from recallwatch.embedders.base import Embedder
from recallwatch.errors import InputError, Interrupted, UsageError
from recallwatch.formats.golden import SPLITS, GoldenQuery, GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.formats.results import RankedList
from recallwatch.retrievers import is_retriever_spec
from recallwatch.retrievers.pipeline import PipelineSpec, single_retriever
from recallwatch.stores.base import Chunk, VectorStore

__all__ = ["FanOut", "Gate", "Part", "gate_from_files", "gate_pipeline", "run_gate", "select_part"]

Part = Literal["auto", "tune", "test", "all"]
# Wraps the store's source so that retrieval runs elsewhere (the Ray engine), same answers.
FanOut = Callable[[StoreSource], Source]


def _new_run_id(now: datetime) -> str:
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


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

    def _run(self, source: Source, start: float) -> GateResult:
        now = datetime.now(UTC)
        run_date = self.run_date or self.golden.as_of or now.date()
        queries, split = select_part(self.golden, self.part)
        labelled = any(q.anchors or q.alternatives for q in queries)
        queries, retrieved, anchors = self._retrieve(source, queries, labelled)
        expected_ids = list(dict.fromkeys(c for q in queries for c in q.expected))
        chunks = source.chunks(expected_ids)
        scored = score_queries(queries, retrieved, chunks, self.policy, self.golden.top_k,
                               self.judgments)
        tied = ties_note(queries, retrieved)
        del retrieved  # the deep lists: scored, they are the largest per-query data
        # one read of every chunk the run shows; whole only where fact recall reads the text or
        # the permission check reads the chunks' acl
        checks_acl = any(q.groups is not None for q in queries)
        shown, texts = _shown_chunks(scored, source, chunks,
                                     whole=labelled or checks_acl)
        scored = apply_permissions(queries, scored, shown)
        if anchors is not None and labelled:
            scored = _with_fact_recall(scored, queries, anchors, shown)
        if anchors is not None and anchors.swapped:
            scored = [replace(q, twins=anchors.twin_rows(q.id, {h.id: h.rank for h in q.expected}))
                      for q in scored]
        shown = {}  # the whole chunks: read, they are not kept

        shared = shared_domains([(q.domain, chunks[h.id].domain) for q in scored
                                 for h in q.expected if h.id in chunks])
        failing_ids = {h.id for q in scored if not q.passed for h in q.expected if not h.in_top_k}
        failing_chunks = [chunks[c] for c in failing_ids if c in chunks]
        doc_ids = sorted({c.doc_id for c in failing_chunks if c.doc_id})
        siblings: dict[str, list[Chunk]] = {}
        for c in source.siblings(doc_ids):
            siblings.setdefault(c.doc_id or "", []).append(c)
        ctx = DiagnosisContext(
            chunks=chunks, siblings=siblings, run_date=run_date, settings=self.policy.search,
            halves_similarity=halves_similarity(failing_chunks, source.embed),
            splits=anchors.splits if anchors is not None else {},
            holders=anchors.holders if anchors is not None else {},
            domains_shared=shared,
        )
        scored = [q if q.passed else replace(q, diagnosis=(*leak_diagnoses(q), *diagnose(q, ctx)))
                  for q in scored]
        agg = replace(aggregate(scored),
                      noise_unmeasured=sum(not q.noise_measured for q in scored))
        facts = [q.fact_recall for q in scored if q.fact_recall is not None]
        if facts:
            agg = replace(agg, mean_fact_recall=sum(facts) / len(facts))
        verdict, reasons = decide(scored, agg, self.policy)
        cost = measure_cost(source.timings, source.index_bytes())
        limit_reasons, checks = run_checks(scored, self.policy, cost)
        leak_reasons, leak_checks = permission_verdict(
            scored, source.acl_filter if isinstance(source, StoreSource) else None)
        limit_reasons, checks = [*leak_reasons, *limit_reasons], [*leak_checks, *checks]
        if limit_reasons:
            verdict, reasons = "STOP", [*reasons, *limit_reasons]
        sparse = sparse_labels_check(scored, self.judgments is not None)
        if sparse is not None:
            checks.append(sparse)

        config = source.config()
        config_hash = canonical_hash(config)
        if source.timings.sample is not None:
            # how the latency was sampled, to time a rerun alike; not part of the hash (it
            # changes no quality figure, so runs with other samples still compare)
            config = {**config, "latency_sample": source.timings.sample}
        warnings = []
        unknown_waivers = sorted(set(self.policy.waivers) - {q.id for q in self.golden.queries})
        if unknown_waivers:
            warnings.append(f"waivers name queries not in the golden set: "
                            f"{', '.join(unknown_waivers)}")
        warnings += _unreachable(scored, self.policy.recall_floor)
        warnings += _twins_note(scored)
        if not shared:
            warnings.append(_domains_note(scored, chunks))
        warnings += tied
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
        total = time.perf_counter() - start
        embed, search = source.timings.embed, source.timings.search
        return GateResult(
            run_id=_new_run_id(now),
            created_at=now.isoformat(timespec="seconds"),
            verdict=verdict,
            reasons=tuple(reasons),
            aggregate=agg,
            queries=tuple(scored),
            patterns=tuple(patterns(scored)),
            dataset={"name": self.golden.name, "version": self.golden.version,
                     "hash": self.golden.hash, "source": self.golden.source or ""},
            dataset_hash=self.golden.hash,
            policy_hash=self.policy.hash,
            config_hash=config_hash,
            config=config,
            policy=self.policy.rules_dict(),
            store=source.describe(),
            timings={"embed": embed, "search": search,
                     "other": max(total - embed - search, 0.0), "total": total},
            warnings=tuple(warnings),
            split=split,
            checks=tuple(checks),
            cost=cost,
            chunk_texts=texts,
        )


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
                  *, whole: bool) -> tuple[dict[str, Chunk], dict[str, str]]:
    """Every chunk the run shows (expected, top-K, beyond K), in that order, once each: the ones
    already read (``known``) and the rest in batches. Returns the chunks themselves when
    ``whole`` (their text gives fact recall), else {}; and the excerpt a person decides from of
    each."""
    ids = list(dict.fromkeys(
        c for q in scored for c in [*(h.id for h in q.expected), *(c for c, _ in q.top),
                                    *(c for c, _ in q.beyond_k)]))
    chunks: dict[str, Chunk] = {}
    texts: dict[str, str] = {}
    for start in range(0, len(ids), _SHOWN_BATCH):
        part = ids[start:start + _SHOWN_BATCH]
        missing = [c for c in part if c not in known]
        read = {**(source.chunks(missing) if missing else {}),
                **{c: known[c] for c in part if c in known}}
        for c in part:
            if c in read:
                texts[c] = excerpt(read[c].text)
                if whole:
                    chunks[c] = read[c]
    return chunks, texts


def run_gate(
    golden: GoldenSet,
    *,
    store: VectorStore | None = None,
    embedder: Embedder | None = None,
    results: dict[str, RankedList] | None = None,
    corpus: dict[str, Chunk] | None = None,
    policy: Policy | None = None,
    run_date: date | None = None,
    results_name: str | Path = "<results>",
    part: Part = "auto",
    fan_out: FanOut | None = None,
    latency_sample: int | None = None,
    judgments: Mapping[tuple[str, str], int] | None = None,
) -> GateResult:
    """Run the gate against a store (searched with ``embedder``) or a results mapping.
    ``fan_out`` wraps the store's source to retrieve elsewhere (the Ray engine).
    ``latency_sample``: how many queries are timed one search call each (0: none; None: as
    many as 10 % of the retrieval time allows, at most 100). ``judgments`` ((query id, chunk
    id) -> grade) tell the noise rule which results are relevant."""
    policy = policy or Policy()
    source: Source
    if (store is None) == (results is None):
        raise UsageError("give exactly one of store= or results=")
    if store is not None:
        if embedder is None:
            from recallwatch.embedders import embedder_for_store

            embedder = embedder_for_store(store)
        if latency_sample == 0 and policy.limits.max_latency_p99_ms is not None:
            raise UsageError(
                "a latency sample of 0 queries measures no search latency, and the policy caps "
                f"it (max_latency_p99_ms {policy.limits.max_latency_p99_ms:g}): time at least "
                "one query (--latency-sample N, or leave it out) or remove max_latency_p99_ms "
                "from the policy")
        local = StoreSource(store, embedder, policy.search, latency_sample=latency_sample)
        source = local if fan_out is None else fan_out(local)
    elif results is not None:
        if policy.search.filter and not corpus:
            raise InputError(
                "a results file carries no chunk metadata, so search.filter cannot be applied",
                source=policy.source, line=policy.search_line, field="search.filter",
                hint="filter in the system that wrote the results and remove search.filter, or "
                "give --corpus FILE to check failures against the filter",
            )
        source = ResultsSource(results, corpus or {}, str(results_name))
    return Gate(golden, policy, run_date, part, judgments).run(source)


def gate_from_files(
    golden: str | Path,
    *,
    store: str | None = None,
    results: str | Path | None = None,
    policy: str | Path | None = None,
    embedder: str | None = None,
    corpus: str | Path | None = None,
    run_date: date | None = None,
    then: Callable[[GateResult, VectorStore | None], GateResult] | None = None,
    part: Part = "auto",
    fan_out: FanOut | None = None,
    latency_sample: int | None = None,
    pipeline: str | Path | None = None,
    runs_out: str | Path | None = None,
    tune_weights: bool = False,
    judgments: Mapping[tuple[str, str], int] | None = None,
) -> GateResult:
    """The gate as the CLI, the pytest plugin and the operations commands run it: a golden file,
    a store URI (queried with the embedder that built it, unless ``embedder`` names one), a
    results file or a pipeline file, and an optional policy file. ``then(result, store)`` runs
    while the store is still open (the history reads it to name what buried a query); the store
    is closed after. With a pipeline, ``runs_out`` receives each retriever's and the fused TREC
    run files."""
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy

    if sum(x is not None for x in (store, results, pipeline)) != 1:
        raise UsageError("give exactly one of --store URI or --results FILE (or --pipeline FILE)")
    # a retriever spec where a store URI is: the pipeline of that one retriever
    piped = (Path(pipeline) if pipeline is not None else single_retriever(store)
             if store is not None and is_retriever_spec(store) else None)
    if (runs_out is not None or tune_weights) and piped is None:
        raise UsageError(f"{'--runs-out' if runs_out is not None else '--tune-weights'} works "
                         "on a pipeline: give it with --pipeline FILE")
    check_latency_sample(latency_sample)  # before any file is read
    golden_set, pol = load_golden(golden), load_policy(policy)
    if piped is not None:
        return gate_pipeline(golden_set, piped, policy=pol, embedder=embedder,
                             corpus=corpus, run_date=run_date, then=then, part=part,
                             runs_out=None if runs_out is None else Path(runs_out),
                             tune_weights=tune_weights, judgments=judgments)
    if results is not None:
        from recallwatch.formats.results import load_results

        chunks = None
        if corpus is not None:
            from recallwatch.formats.corpus import read_corpus

            chunks = {c.id: c for c in read_corpus(corpus)}
        result = run_gate(golden_set, results=load_results(results), corpus=chunks, policy=pol,
                          run_date=run_date, results_name=results, part=part,
                          judgments=judgments)
        return then(result, None) if then is not None else result
    from recallwatch.embedders import embedder_for_store
    from recallwatch.stores import open_store

    vector_store = open_store(str(store))
    try:
        result = run_gate(golden_set, store=vector_store,
                          embedder=embedder_for_store(vector_store, embedder), policy=pol,
                          run_date=run_date, part=part, fan_out=fan_out,
                          latency_sample=latency_sample, judgments=judgments)
        return then(result, vector_store) if then is not None else result
    finally:
        vector_store.close()


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


def gate_pipeline(golden: GoldenSet, path: Path | PipelineSpec, *, policy: Policy,
                  embedder: str | None = None,
                  corpus: str | Path | None = None, run_date: date | None = None,
                  then: Callable[[GateResult, VectorStore | None], GateResult] | None = None,
                  part: Part = "auto", runs_out: Path | None = None,
                  tune_weights: bool = False,
                  judgments: Mapping[tuple[str, str], int] | None = None) -> GateResult:
    """The gate on the pipeline file ``path`` (or a pipeline read already, whose relative paths
    are read from the working folder): its final lists judged, its stages reported, its run
    files written to ``runs_out``. ``then(result, store)`` runs while the retrievers are open
    (``store``: the first store retriever's store, else None). With ``tune_weights`` the wsum
    weights are first chosen on the golden set's tune queries, and the test queries judged."""
    from recallwatch.acceptance.pipeline import PipelineSource, with_stages, write_runs
    from recallwatch.retrievers.pipeline import Pipeline, load_pipeline
    from recallwatch.retrievers.store import StoreRetriever

    spec = path if isinstance(path, PipelineSpec) else load_pipeline(path)
    base_dir = Path.cwd() if isinstance(path, PipelineSpec) else path.resolve().parent
    chunks: dict[str, Chunk] = {}
    if corpus is not None:
        from recallwatch.formats.corpus import read_corpus

        chunks = {c.id: c for c in read_corpus(corpus)}
    with Pipeline.from_spec(spec, base_dir=base_dir, embedder=embedder) as opened:
        tuned = None
        if tune_weights:
            from recallwatch.acceptance.pipeline import tune_on_split

            if part not in ("auto", "test"):
                raise UsageError(f"--tune-weights chooses the weights on the tune queries, so the "
                                 f"gate judges the test queries; --part {part} would judge "
                                 "queries the weights were fitted to")
            tuned = tune_on_split(opened, golden, policy)
        source = PipelineSource(opened, chunks, spec.source)
        gated = Gate(golden, policy, run_date, part, judgments).run(source)
        result = with_stages(gated, source, tuned)
        if runs_out is not None:
            write_runs(source, [(q.id, q.text) for q in result.queries], runs_out)
        if then is not None:
            store = next((r.store for r in opened.retrievers.values()
                          if isinstance(r, StoreRetriever)), None)
            result = then(result, store)
    return result
