"""The gate whole, as one call: everything ``recallwatch gate`` does.

    import recallwatch as rw
    result = rw.gate("golden.yaml", "lancedb://index?table=chunks", history="runs.db")
    result.verdict, result.to_dict()

:func:`gate` takes the golden set, the source and the policy (each opened or as a path), and

1. opens the source: a store URI, a results file or a pipeline file, or takes one opened (a
   :class:`VectorStore`, a :class:`Pipeline`, results in memory);
2. runs the acceptance gate (:class:`~recallwatch.acceptance.gate.Gate`), on Ray workers with
   ``engine="ray"``; a pipeline's stages and run files come with it;
3. adds judged@K (with ``judgments``) and the stale-set check (with a history or a query log),
   and judges the answers of a RAG assistant (with ``answers``, :mod:`recallwatch.answers`);
4. records the run in the history while the store is still open (with ``history``);
5. prices serving 1,000 queries at the run's measured speed and size (with ``prices``,
   :mod:`recallwatch.acceptance.money`);
6. writes the report set and the JUnit file (with ``report``, ``junit``).

The CLI maps its flags to these parameters and nothing else, so a gate run from Python prints
the same JSON and records the same history row. Errors name the parameters (``latency_sample=``);
the CLI shows them as its flags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, cast

from recallwatch._files import check_output_dir
from recallwatch.acceptance.gate import Gate, Part, results_source, store_source
from recallwatch.acceptance.model import GateResult
from recallwatch.acceptance.retrieve import LatencyBaseline, Source, check_latency_sample
from recallwatch.embedders.base import Embedder
from recallwatch.errors import UsageError
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.formats.results import RankedList
from recallwatch.records import Chunk
from recallwatch.retrievers.pipeline import Pipeline
from recallwatch.stores.base import VectorStore

if TYPE_CHECKING:
    from recallwatch.acceptance.pipeline import PipelineSource
    from recallwatch.answers.gate import AnswerOptions, AnswerPlan
    from recallwatch.formats.prices import Prices
    from recallwatch.retrievers.tune import Tuned

__all__ = ["Evidence", "Outputs", "SearchOptions", "SourceSpec", "gate"]

PathIn = str | Path
SourceKind = Literal["store", "results", "pipeline", "retriever"]
Engine = Literal["local", "ray"]


@dataclass(frozen=True)
class SourceSpec:
    """A source named by where it is: a store URI, a retriever spec (``python:M:F``, ``bm25:FILE``,
    ``http(s)://…``: searched as a one-retriever pipeline), a results file or a pipeline file."""

    kind: SourceKind
    where: str

    def __post_init__(self) -> None:
        # a retriever spec given where a store URI is (SPEC: wherever a store URI is accepted)
        from recallwatch.retrievers import is_retriever_spec

        if self.kind == "store" and is_retriever_spec(self.where):
            object.__setattr__(self, "kind", "retriever")

    @classmethod
    def of(cls, where: PathIn) -> SourceSpec:
        """A store URI (``scheme://…``), a pipeline file (``.yaml``/``.yml``) or a results
        file (anything else)."""
        from recallwatch.retrievers import is_retriever_spec

        text = str(where)
        if is_retriever_spec(text):
            return cls("retriever", text)
        if "://" in text:
            return cls("store", text)
        if Path(text).suffix.lower() in (".yaml", ".yml"):
            return cls("pipeline", text)
        return cls("results", text)


# A source ready to open: named by where it is, opened, or results as ranked lists.
Resolved: TypeAlias = SourceSpec | VectorStore | Pipeline | dict[str, RankedList]


@dataclass(frozen=True)
class SearchOptions:
    """How the source is searched and which queries are judged."""

    embedder: str | Embedder | None = None  # a store's: default, the one that built it
    # chunk metadata for a results file or a pipeline (Gold labels, diagnosis, search.filter)
    corpus: PathIn | Mapping[str, Chunk] | None = None
    latency_sample: int | None = None  # queries timed one call each; None: automatic; 0: none
    part: Part = "auto"
    run_date: date | None = None
    tune_weights: bool = False  # a wsum pipeline's weights chosen on the tune queries first
    engine: Engine = "local"
    address: str | None = None  # Ray's
    workers: int | None = None


@dataclass(frozen=True)
class Evidence:
    """What else the gate reads beside the source: judgments (files, or (query id, chunk id) ->
    grade) for the noise rule and judged@K, a query log for the stale-set check, and prices for
    the cost in money."""

    judgments: Sequence[PathIn] | Mapping[tuple[str, str], int] | None = None
    log: PathIn | None = None
    answers: AnswerOptions | None = None  # the answers to judge, and by whom
    prices: Prices | PathIn | None = None


@dataclass(frozen=True)
class Outputs:
    """Where the run goes: the history, the report set, the JUnit file, a pipeline's runs."""

    history: PathIn | None = None
    report: PathIn | None = None
    junit: PathIn | None = None
    runs_out: PathIn | None = None


def gate(
    golden: GoldenSet | PathIn,
    source: SourceSpec | PathIn | VectorStore | Pipeline | Mapping[str, Any] | Any,
    policy: Policy | PathIn | None = None,
    history: PathIn | None = None,
    *,
    embedder: str | Embedder | None = None,
    corpus: PathIn | Mapping[str, Chunk] | None = None,
    judgments: Sequence[PathIn] | Mapping[tuple[str, str], int] | None = None,
    log: PathIn | None = None,
    answers: AnswerOptions | None = None,
    prices: Prices | PathIn | None = None,
    run_date: date | None = None,
    part: Part = "auto",
    latency_sample: int | None = None,
    tune_weights: bool = False,
    runs_out: PathIn | None = None,
    report: PathIn | None = None,
    junit: PathIn | None = None,
    engine: Engine = "local",
    address: str | None = None,
    workers: int | None = None,
) -> GateResult:
    """Run the golden set against ``source`` and answer ACCEPT or STOP, as ``recallwatch gate``.

    ``golden`` and ``policy`` are loaded objects or files (no policy: the default thresholds;
    a golden set may be ``irds:ID`` or ``beir:DIR``). ``source`` is a store URI, a pipeline file
    (``.yaml``), a results file (``.jsonl``), a run file (TREC, Parquet or Arrow), a
    :class:`SourceSpec`, or one opened: a store, a :class:`Pipeline`, or results in memory (a
    :class:`Run`, a ``{query_id: {chunk_id: score}}`` dict, a pandas or polars DataFrame with
    columns ``query_id``, ``doc_id``, ``score``, or query id -> :class:`RankedList`). With
    ``history`` (a SQLite path or a PostgreSQL URI) the run is compared with the earlier ones
    and recorded. ``report`` (a directory) and ``junit`` (a file) receive the reports;
    ``runs_out`` a pipeline's TREC run files. ``prices`` (a prices file or :class:`Prices`)
    adds the cost in money of serving 1,000 queries at this run's measured speed, index size
    and generator tokens. The result's ``to_dict()`` is the ``--format json`` object,
    ``to_frame()`` a row per query."""
    return GateRun(
        golden, source, policy,
        SearchOptions(embedder, corpus, latency_sample, part, run_date, tune_weights, engine,
                      address, workers),
        Evidence(judgments, log, answers, prices),
        Outputs(history, report, junit, runs_out),
    ).run()


@dataclass
class _Opened:
    """An opened source: what the gate reads, the store the history and the stale-set check
    read (a store's, or a pipeline's first store retriever's), and a pipeline's own source."""

    source: Source
    store: VectorStore | None = None
    pipeline: PipelineSource | None = None


@dataclass
class GateRun:
    """One gate run, as a chain of named steps (see the module's docstring)."""

    golden: GoldenSet | PathIn
    source: SourceSpec | PathIn | VectorStore | Pipeline | Mapping[str, Any] | Any
    policy: Policy | PathIn | None = None
    search: SearchOptions = field(default_factory=SearchOptions)
    evidence: Evidence = field(default_factory=Evidence)
    outputs: Outputs = field(default_factory=Outputs)

    def run(self) -> GateResult:
        source = self._check()
        prices = _prices(self.evidence.prices)  # a bad file fails before anything is searched
        judged = self._judged()
        from recallwatch.scale import engine_session

        s = self.search
        with engine_session(s.engine, s.address, s.workers) as on_ray:
            golden, policy = _golden(self.golden), _policy(self.policy)
            plan = self._answer_plan(golden)  # its files read before any search
            with self._open(source, policy, on_ray, golden) as opened:
                result = self._gate(opened, golden, policy, judged)
                result = self._add_evidence(result, opened, golden, policy, judged)
                result = self._judge_answers(result, opened, policy, plan)
                result = _priced(result, prices)
                result = self._record(result, opened)
        self._write(result)
        return result

    def _check(self) -> Resolved:
        """Refuse contradicting parameters and unusable output paths before anything is read
        or recorded. Returns the source resolved (see :func:`_resolved`)."""
        from recallwatch.report import check_report_dir, check_report_file

        out, s = self.outputs, self.search
        if out.report is not None:
            check_report_dir(Path(out.report), "report=")
        if out.junit is not None:
            check_report_file(Path(out.junit), "junit=")
        source = _resolved(self.source)
        is_pipeline = isinstance(source, Pipeline) or (
            isinstance(source, SourceSpec) and source.kind in ("pipeline", "retriever"))
        if (out.runs_out is not None or s.tune_weights) and not is_pipeline:
            raise UsageError(f"{'runs_out=' if out.runs_out is not None else 'tune_weights=True'} "
                             "works on a pipeline: give the source as a pipeline file or an "
                             "opened Pipeline")
        if s.tune_weights and s.part not in ("auto", "test"):
            raise UsageError(f"tune_weights=True chooses the weights on the tune queries, so the "
                             f"gate judges the test queries; part={s.part} would judge "
                             "queries the weights were fitted to")
        check_latency_sample(s.latency_sample)
        if out.runs_out is not None:
            check_output_dir(out.runs_out, "runs_out=")
        return source

    def _judged(self) -> Mapping[tuple[str, str], int] | None:
        """The judgments as (query id, chunk id) -> grade; files are read now, so a bad one fails
        before the run."""
        given = self.evidence.judgments
        if given is None or isinstance(given, Mapping):
            return given
        if not given:
            return None
        from recallwatch.formats.judging import judged_pairs

        return judged_pairs(given)

    @contextmanager
    def _open(self, source: Resolved, policy: Policy, on_ray: bool,
              golden: GoldenSet) -> Iterator[_Opened]:
        """The source opened for the run, closed after it (only what was opened here)."""
        s = self.search
        ids = frozenset(q.id for q in golden.queries)  # a results line of another id is named
        named = source if isinstance(source, SourceSpec) else None
        # the corpus first (as the source's own files): a bad one fails before a store opens
        corpus = {} if named is not None and named.kind == "store" else _corpus(s.corpus)
        if named is not None and named.kind == "store":
            from recallwatch.stores import open_store

            store = open_store(named.where)
            baseline = None
            try:
                if not on_ray:
                    baseline = self._latency_baseline(store, golden, policy)
                yield _Opened(self._store_source(store, policy, named.where, on_ray, baseline),
                              store)
            finally:
                if baseline is not None:
                    baseline.close()
                store.close()
        elif named is not None and named.kind in ("pipeline", "retriever"):
            from recallwatch.retrievers.pipeline import load_pipeline, single_retriever

            embedder = s.embedder if isinstance(s.embedder, str) or s.embedder is None else None
            if named.kind == "retriever":  # one retriever: the pipeline of it alone
                spec, base_dir = single_retriever(named.where), Path.cwd()
            else:
                path = Path(named.where)
                spec, base_dir = load_pipeline(path), path.resolve().parent
            with Pipeline.from_spec(spec, base_dir=base_dir, embedder=embedder) as opened:
                yield self._pipeline(opened, corpus, spec.source)
        elif named is not None:
            from recallwatch.formats.results import load_results

            yield _Opened(results_source(load_results(named.where), policy, corpus=corpus,
                                         name=named.where, golden_ids=ids))
        elif isinstance(source, Pipeline):
            yield self._pipeline(source, corpus, "<pipeline>")
        elif isinstance(source, VectorStore):
            yield _Opened(self._store_source(source, policy, None, False), source)
        elif isinstance(source, dict):
            yield _Opened(results_source(source, policy, corpus=corpus, golden_ids=ids))

    def _latency_baseline(self, store: VectorStore, golden: GoldenSet,
                          policy: Policy) -> LatencyBaseline | None:
        """The baseline run's index (the history's last accepted run of this golden set and
        policy), opened to be timed beside the store's calls, when the policy caps the cost
        increase and the latency is sampled; None when there is none to reach."""
        if (self.outputs.history is None or self.search.latency_sample == 0
                or policy.limits.max_cost_increase is None):
            return None
        from recallwatch.history import latency_baseline

        return latency_baseline(self.outputs.history)(store, golden.hash, policy.hash)

    def _store_source(self, store: VectorStore, policy: Policy, uri: str | None,
                      on_ray: bool, baseline: LatencyBaseline | None = None) -> Source:
        """The store searched with its embedder; on Ray, by workers that open ``uri`` again."""
        from recallwatch.embedders import embedder_for_store

        s = self.search
        embedder = s.embedder if isinstance(s.embedder, Embedder) else \
            embedder_for_store(store, s.embedder)
        local = store_source(store, policy, embedder=embedder, latency_sample=s.latency_sample,
                             baseline=baseline)
        if not on_ray or uri is None:
            return local
        from recallwatch.scale.ray_engine import RaySource

        spec = s.embedder if isinstance(s.embedder, str) else None
        return cast(Source, RaySource(local, uri, spec, s.workers))

    @staticmethod
    def _pipeline(opened: Pipeline, corpus: dict[str, Chunk], name: str) -> _Opened:
        from recallwatch.acceptance.pipeline import PipelineSource
        from recallwatch.retrievers.store import StoreRetriever

        source = PipelineSource(opened, corpus, name)
        store = next((r.store for r in opened.retrievers.values()
                      if isinstance(r, StoreRetriever)), None)
        return _Opened(source, store, source)

    def _gate(self, opened: _Opened, golden: GoldenSet, policy: Policy,
              judged: Mapping[tuple[str, str], int] | None) -> GateResult:
        """The gate itself; on a pipeline, its weights tuned first (``tune_weights``), its
        stages reported and its run files written (``runs_out``)."""
        s = self.search
        tuned: Tuned | None = None
        if opened.pipeline is not None and s.tune_weights:
            from recallwatch.acceptance.pipeline import tune_on_split

            tuned = tune_on_split(opened.pipeline.pipeline, golden, policy)
        result = Gate(golden, policy, s.run_date, s.part, judged).run(opened.source)
        if opened.pipeline is None:
            return result
        from recallwatch.acceptance.pipeline import with_stages, write_runs

        result = with_stages(result, opened.pipeline, tuned)
        if self.outputs.runs_out is not None:
            write_runs(opened.pipeline, [(q.id, q.text) for q in result.queries],
                       Path(self.outputs.runs_out))
        return result

    def _add_evidence(self, result: GateResult, opened: _Opened, golden: GoldenSet,
                      policy: Policy, judged: Mapping[tuple[str, str], int] | None
                      ) -> GateResult:
        """judged@K (with judgments) and the stale-set figures (with a history or a log)."""
        if judged is not None:
            from recallwatch.acceptance.judged import with_judged

            given = self.evidence.judgments
            sources = [] if isinstance(given, Mapping) else [str(j) for j in given or []]
            result = with_judged(result, judged, sources=sources)
        return self._with_staleness(result, opened.store, golden, policy)

    def _with_staleness(self, result: GateResult, store: VectorStore | None,
                        golden: GoldenSet, policy: Policy) -> GateResult:
        """The result with its stale-set figures (and a warning when stale). The history part
        needs the run history, the drift part a query log; without either there is nothing to
        add."""
        history, log = self.outputs.history, self.evidence.log
        if history is None and log is None:
            return result
        from recallwatch.judgments.staleness import check_staleness, warnings_of

        hist = None
        if history is not None:
            from recallwatch.history import History

            hist = History(history)
        try:
            figures = check_staleness(result, golden if log is not None else None,
                                      policy.staleness, history=hist,
                                      log=None if log is None else Path(log),
                                      embedder=self._log_embedder(store) if log else None)
        finally:
            if hist is not None:
                hist.close()
        return replace(result, staleness=figures,
                       warnings=tuple(result.warnings) + tuple(warnings_of(figures)))

    def _log_embedder(self, store: VectorStore | None) -> Embedder:
        """The embedder the query log is compared with: the run's."""
        from recallwatch.embedders import embedder_for_store, embedder_from_spec, get_embedder

        e = self.search.embedder
        if isinstance(e, Embedder):
            return e
        if store is not None:
            return embedder_for_store(store, e)
        return get_embedder() if e is None else embedder_from_spec(e)

    def _answer_plan(self, golden: GoldenSet) -> AnswerPlan | None:
        """The answers, generator, judge and labelled answers asked for, opened and checked
        against the golden set (a python: generator is found in the golden set's folder too)."""
        asked = self.evidence.answers
        if asked is None:
            return None
        where = self.golden if isinstance(self.golden, str | Path) else None
        base = Path(where).resolve().parent if where is not None and Path(where).exists() \
            else None
        return asked.open(golden, base)

    def _judge_answers(self, result: GateResult, opened: _Opened, policy: Policy,
                       plan: AnswerPlan | None) -> GateResult:
        """The answers judged and the policy's answer rules applied; without answers, those
        rules marked "not applied"."""
        if plan is None and not policy.answers.any:
            return result  # nothing to judge or mark: the answers package is not imported
        from recallwatch.answers.gate import rules_not_applied, with_answers

        if plan is None:
            return rules_not_applied(result, policy)
        return with_answers(result, policy, plan, opened.source.chunks)

    def _record(self, result: GateResult, opened: _Opened) -> GateResult:
        """The run compared with the earlier ones and recorded, while the store is open (the
        comparison reads it to name what buried a query)."""
        if self.outputs.history is None:
            return result
        from recallwatch.history import record_gate_run

        return record_gate_run(result, self.outputs.history, store=opened.store)

    def _write(self, result: GateResult) -> None:
        from recallwatch.report import write_junit, write_report_set

        if self.outputs.report is not None:
            write_report_set(result, self.outputs.report, "report=")
        if self.outputs.junit is not None:
            write_junit(result, self.outputs.junit, "junit=")


def _resolved(source: object) -> Resolved:
    """A source named by where it is as its :class:`SourceSpec`; a store or a pipeline as it
    is; results in memory as ranked lists."""
    if isinstance(source, SourceSpec):
        return source
    if isinstance(source, str | Path):
        spec = SourceSpec.of(source)
        if spec.kind == "results" and not _is_results_file(spec.where):
            from recallwatch.metrics import Run

            return _ranked(Run.read(spec.where))  # a run file: TREC, Parquet or Arrow
        return spec
    if isinstance(source, VectorStore | Pipeline):
        return source
    try:
        return _ranked(source)
    except UsageError:
        raise UsageError(
            "source: expected a store URI, a results file, a pipeline file (.yaml), an opened "
            "store or Pipeline, or results: a Run, a {query_id: {chunk_id: score}} dict or a "
            "DataFrame with columns query_id, doc_id and score; found "
            f"{type(source).__name__}") from None


def _is_results_file(path: str) -> bool:
    """A results file (JSON Lines) by its name; any other file is read as a run file."""
    return path.lower().endswith((".jsonl", ".json", ".ndjson", ".jsonl.gz"))


def _ranked(results: object) -> dict[str, RankedList]:
    """Results in memory as ranked lists: query id -> RankedList as given, or any run shape
    :meth:`Run.of` takes (each query's chunks in rank order)."""
    import numpy as np

    from recallwatch.metrics import Run

    if isinstance(results, Mapping) and all(isinstance(v, RankedList)
                                            for v in results.values()):
        return dict(results)
    run = results if isinstance(results, Run) else Run.of(results)
    return {qid: RankedList(list(hits), np.fromiter(hits.values(), dtype=np.float64))
            for qid, hits in run.to_dict().items()}


_T = TypeVar("_T")


def _opened(value: object, kind: type[_T], param: str, what: str,
            load: Callable[[PathIn], _T]) -> _T:
    """``value`` as it is when it is a ``kind``, else read from the file it names."""
    if isinstance(value, kind):
        return value
    if not isinstance(value, str | Path):
        raise UsageError(f"{param}= must be {what}; found {type(value).__name__}")
    return load(value)


def _golden(golden: GoldenSet | PathIn) -> GoldenSet:
    from recallwatch.formats.golden import load_golden

    return _opened(golden, GoldenSet, "golden", "a GoldenSet or a golden file's path",
                   load_golden)


def _policy(policy: Policy | PathIn | None) -> Policy:
    from recallwatch.formats.policy import load_policy

    if policy is None:
        return load_policy(None)
    return _opened(policy, Policy, "policy", "a Policy, a policy file's path or None",
                   load_policy)


def _prices(prices: Prices | PathIn | None) -> Prices | None:
    if prices is None:
        return None
    from recallwatch.formats.prices import Prices, load_prices

    return _opened(prices, Prices, "prices", "Prices, a prices file's path or None",
                   load_prices)


def _priced(result: GateResult, prices: Prices | None) -> GateResult:
    """The cost of serving 1,000 queries at the run's figures, beside the quality it measured."""
    if prices is None:
        return result
    from recallwatch.acceptance.money import gate_serving, price_serving

    a, cost = result.aggregate, result.cost or {}
    quality = {"mean quality": a.mean_quality, "recall": a.mean_recall,
               "search p99 ms": cost.get("search_p99_ms")}
    serving = gate_serving(result.cost, result.answers, quality)
    return replace(result, money=price_serving(prices, serving))


def _corpus(corpus: PathIn | Mapping[str, Chunk] | None) -> dict[str, Chunk]:
    if corpus is None:
        return {}
    if isinstance(corpus, Mapping):
        return dict(corpus)
    from recallwatch.formats.corpus import read_corpus

    return {c.id: c for c in read_corpus(corpus)}

