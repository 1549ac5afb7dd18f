"""What a gate run produces. Plain frozen data: reports, history and the web read only this."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from recallwatch.formats.frames import Frame

__all__ = [
    "CAUSE_ORDER",
    "CAUSE_TITLES",
    "EXCERPT_CHARS",
    "SCHEMA_VERSION",
    "Aggregate",
    "Cause",
    "Check",
    "Diagnosis",
    "ExpectedHit",
    "GateResult",
    "Pattern",
    "PermissionLeak",
    "QueryResult",
    "Reason",
    "RunConfig",
    "RunTimings",
    "Verdict",
    "excerpt",
]

SCHEMA_VERSION = 1

Verdict = Literal["ACCEPT", "STOP"]
# Why an expected chunk is missing, checked in this order (the cheapest and most frequent fix
# first): chunking, description, labelling, embedding; plus the noise rule's own cause.
# "permission": a chunk of the top K the asking user may not see (the permission rule).
Cause = Literal["chunking", "description", "labelling", "embedding", "noise", "permission"]
# How each cause is named to a reader (the JSON keeps the short names above).
CAUSE_TITLES: dict[str, str] = {
    "chunking": "chunking",
    "description": "missing description",
    "labelling": "labelling",
    "embedding": "embedding",
    "noise": "noise",
    "permission": "permission leak",
}
# How much of a chunk's text a run keeps for each chunk it shows (expected, top-K, what buried a
# query): enough for a person to recognise the chunk, bounded so a run stays small.
EXCERPT_CHARS = 300


def excerpt(text: str) -> str:
    """The first ``EXCERPT_CHARS`` characters of a chunk's text on one line (runs of whitespace
    become one space), ending with "…" when the text was longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS - 1] + "…"


# One line that tells a reader what the cause names mean, shown once above the diagnoses.
CAUSE_ORDER = ("each missing chunk is checked for four causes in order — chunking, missing "
               "description, labelling, embedding — and the first that fits is named")


@dataclass(frozen=True)
class ExpectedHit:
    id: str
    rank: int | None  # 1-based rank in the deep search; None when beyond the search depth
    score: float | None  # None only when the chunk does not exist or the source cannot score it
    gold: bool
    in_top_k: bool


@dataclass(frozen=True)
class Diagnosis:
    step: int  # 1..4 in the order the causes are checked (5 for noise)
    cause: Cause
    chunk_id: str | None
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """The cause as a reader sees it, e.g. "missing description"."""
        return CAUSE_TITLES.get(self.cause, self.cause)

    def line(self) -> str:
        """The cause named, then the finding: how every text report shows a diagnosis."""
        return f"{self.title}: {self.summary}"


@dataclass(frozen=True)
class PermissionLeak:
    """A chunk in a query's top K that the asking user's groups may not see: its id and its acl
    (the groups that may see it, any one of which would have granted it)."""

    id: str
    acl: tuple[str, ...]

    def line(self, query_groups: Sequence[str] | None) -> str:
        """How every text report names the leak and the missing grant."""
        held = ", ".join(query_groups or ()) or "no group"
        needed = ", ".join(self.acl) or "no group at all"
        return (f"{self.id} is visible only to {needed}; the asking user holds {held}")


@dataclass(frozen=True)
class QueryResult:
    id: str
    text: str
    domain: str | None
    tags: tuple[str, ...]
    top_k: int
    recall: float
    quality: float
    noise: int
    noise_ceiling: float
    allowed_noise: int
    noise_threshold: float | None
    precision: float
    rr: float
    ndcg: float
    passed: bool
    failed_rules: tuple[str, ...]
    expected: tuple[ExpectedHit, ...]
    top: tuple[tuple[str, float], ...]  # the top-K as (id, score), for drill-downs
    has_gold: bool
    waiver: str | None = None
    diagnosis: tuple[Diagnosis, ...] = ()
    # The results ranked between K+1 and the deepest expected chunk missing from the top-K (for a
    # failing query only): what buried it, for the history's "who buried it".
    beyond_k: tuple[tuple[str, float], ...] = ()
    # Content anchors (golden entries {doc_id, quote}): how each resolved against this run's
    # chunks, and whether its quote is in the top-K text; fact recall@K is the share that is
    # (None for a query without anchors).
    anchors: tuple[dict[str, Any], ...] = ()
    fact_recall: float | None = None
    # Groups of alternatives (golden entries {any: [...]}, {at_least: N, of: [...]}): members,
    # how many are needed, the ones counted as expected items and the ones in the top K.
    alternatives: tuple[dict[str, Any], ...] = ()
    # The asking user's groups (None: the query is not checked for permissions), and the chunks
    # of its top K those groups may not see.
    groups: tuple[str, ...] | None = None
    permission_leaks: tuple[PermissionLeak, ...] = ()
    # A pipeline's stages for this query (gate --pipeline): candidate recall of the first stage,
    # and the expected chunks "lost_by_reranker" (candidates the final top-K dropped) and
    # "never_retrieved" (in no candidate list); None for a store or a results file.
    stage: dict[str, Any] | None = None
    # The noise rule needs to know which results are irrelevant. ``labels_sparse``: the query's
    # known relevant chunks (expected, or judged relevant) are fewer than K minus the allowed
    # noise, so even an ideal ranking leaves more unlabelled results below them than allowed.
    # ``noise_unjudged``: how many of the ``noise`` results nobody listed or judged.
    # ``noise_measured`` False: the noise rule could not tell anything on this query (sparse
    # labels, and its count rests on unjudged results), so it was not applied.
    labels_sparse: bool = False
    noise_unjudged: int = 0
    noise_measured: bool = True
    # Expected chunks found through an identical twin (a chunk of the same text under another
    # id, in the top K; policy twins_count_as_found): {"expected", "found", "rank"} each.
    twins: tuple[dict[str, Any], ...] = ()
    # The assistant's answer to this query, judged (gate --answers/--generator): faithfulness,
    # relevance, correctness, hallucinated, failure ("retrieval" | "generation" | "both" | None)
    # and the evidence (recallwatch.answers); None when the run judged no answers.
    answer: dict[str, Any] | None = None

    def failure_words(self) -> str:
        """Why the query fails, in words that tell a recall failure from a noise failure and
        say where each Gold chunk was found: "recall 0.667, 1 of 3 expected chunks missing from
        the top 10" / "noise: 8 of the top 10 score below its worst expected chunk, 3 allowed;
        recall is 1.000"."""
        parts = []
        if "recall" in self.failed_rules:
            missing = sum(not h.in_top_k for h in self.expected)
            parts.append(f"recall {self.recall:.3f}, {missing} of {len(self.expected)} expected "
                         f"chunk{'s' if len(self.expected) != 1 else ''} missing from the top "
                         f"{self.top_k}")
        if "noise" in self.failed_rules:
            parts.append(f"noise: {self.noise} of the top {self.top_k} score below its worst "
                         f"expected chunk, {self.allowed_noise} allowed"
                         + ("" if "recall" in self.failed_rules
                            else f"; recall is {self.recall:.3f}"))
        other = [r for r in self.failed_rules if r not in ("recall", "noise")]
        parts += other
        gold = [h for h in self.expected if h.gold]
        if gold:
            parts.append(", ".join(
                f"Gold chunk {h.id} " + (f"found at rank {h.rank}" if h.in_top_k
                                         else f"missed (rank {h.rank})" if h.rank
                                         else "missed (beyond the search depth)")
                for h in gold))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        # field by field, not dataclasses.asdict: that deep-copies every value, the bulk of a
        # large run's report time and memory
        return {
            "id": self.id, "text": self.text, "domain": self.domain, "tags": list(self.tags),
            "top_k": self.top_k, "recall": self.recall, "quality": self.quality,
            "noise": self.noise, "noise_ceiling": self.noise_ceiling,
            "allowed_noise": self.allowed_noise, "noise_threshold": self.noise_threshold,
            "precision": self.precision, "rr": self.rr, "ndcg": self.ndcg,
            "passed": self.passed, "failed_rules": list(self.failed_rules),
            "expected": [{"id": e.id, "rank": e.rank, "score": e.score, "gold": e.gold,
                          "in_top_k": e.in_top_k} for e in self.expected],
            "top": [{"id": i, "score": s} for i, s in self.top],
            "has_gold": self.has_gold, "waiver": self.waiver,
            "diagnosis": [asdict(x) for x in self.diagnosis],
            "beyond_k": [{"id": i, "score": s} for i, s in self.beyond_k],
            "anchors": [dict(a) for a in self.anchors],
            "fact_recall": self.fact_recall,
            "alternatives": [dict(g) for g in self.alternatives],
            "groups": None if self.groups is None else list(self.groups),
            "permission_leaks": [{"id": x.id, "acl": list(x.acl)}
                                 for x in self.permission_leaks],
            "stage": self.stage,
            "labels_sparse": self.labels_sparse, "noise_unjudged": self.noise_unjudged,
            "noise_measured": self.noise_measured,
            "twins": [dict(t) for t in self.twins],
            "answer": self.answer,
        }


@dataclass(frozen=True)
class Reason:
    rule: str
    message: str
    queries: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "message": self.message, "queries": list(self.queries)}


@dataclass(frozen=True)
class Check:
    """One run-level limit of the policy, evaluated (a target, max_drop, a cost cap): what was
    compared and the outcome, blocking or not, so a report can say why a drop did not block.

    ``status``: ``pass``, ``stop`` (it is one of the STOP reasons), ``within noise`` (a drop
    larger than allowed that a paired test cannot tell from chance) or ``not applied`` (no
    baseline or no measurement to compare)."""

    rule: str
    subject: str  # what was compared: "nDCG@10", "nDCG@10 in legal", "search latency p99"
    status: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Pattern:
    """A failure pattern across the dataset, with what it usually means and where to look."""

    name: str
    message: str
    queries: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "message": self.message, "queries": list(self.queries)}


@dataclass(frozen=True)
class Aggregate:
    n_queries: int
    mean_quality: float
    mean_recall: float
    mean_precision: float
    mrr: float
    mean_ndcg: float
    mean_noise: float
    failed_queries: int
    gold_failures: int
    other_failures: int
    per_domain: dict[str, dict[str, float]] = field(default_factory=dict)
    mean_fact_recall: float | None = None  # over the queries with content anchors
    noise_unmeasured: int = 0  # queries whose labels were too sparse for the noise rule

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunTimings:
    """How long a run took, in seconds: embedding the queries, searching, the rest, in all."""

    embed: float
    search: float
    other: float
    total: float

    def to_dict(self) -> dict[str, float]:
        return {"embed": self.embed, "search": self.search, "other": self.other,
                "total": self.total}

    def __getitem__(self, key: str) -> float:
        """A figure by its JSON key (``timings["total"]``), as scripts written when the timings
        were a dict read it."""
        return self.to_dict()[key]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunTimings:
        # a figure a record lacks reads as 0 (every recorded run so far has all four)
        return cls(*(float(d.get(k) or 0.0) for k in ("embed", "search", "other", "total")))


@dataclass(frozen=True)
class RunConfig:
    """What a run searched with. ``source``: "store", "results" or "pipeline"; a store's run
    states its embedder's fingerprint and its search settings, a pipeline's run the pipeline.
    ``latency_sample`` ("auto" or a number of timed queries) says how the latency was sampled,
    to time a rerun alike: it is not part of :meth:`hashed` (it changes no quality figure).
    ``extra``: keys a record holds that none of these name, kept as they were."""

    source: str | None
    embedder: Mapping[str, Any] | None = None
    search: Mapping[str, Any] | None = None
    pipeline: Mapping[str, Any] | None = None
    latency_sample: int | str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def hashed(self) -> dict[str, Any]:
        """What ``config_hash`` covers: :meth:`to_dict` without ``latency_sample``."""
        out: dict[str, Any] = {} if self.source is None else {"source": self.source}
        for key, value in (("embedder", self.embedder), ("search", self.search),
                           ("pipeline", self.pipeline)):
            if value is not None:
                out[key] = dict(value)
        return {**out, **self.extra}

    def to_dict(self) -> dict[str, Any]:
        """The run's ``config`` object: only the keys that apply, ``latency_sample`` last."""
        out = self.hashed()
        if self.latency_sample is not None:
            out["latency_sample"] = self.latency_sample
        return out

    def __getitem__(self, key: str) -> Any:
        """A key of :meth:`to_dict` (``config["embedder"]``), as scripts written when the
        configuration was a dict read it."""
        return self.to_dict()[key]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunConfig:
        # A key that is null, or of another type than its field's, stays in ``extra`` as it
        # was (no writer has stored one so): any record's keys and values come back whole.
        parts = {k: d[k] for k in ("embedder", "search", "pipeline")
                 if isinstance(d.get(k), Mapping)}
        source = d["source"] if isinstance(d.get("source"), str) else None
        sample = d.get("latency_sample")
        if isinstance(sample, bool) or not isinstance(sample, int | str):
            sample = None
        taken = {*parts, *(["source"] if source is not None else []),
                 *(["latency_sample"] if sample is not None else [])}
        return cls(source=source, embedder=parts.get("embedder"), search=parts.get("search"),
                   pipeline=parts.get("pipeline"), latency_sample=sample,
                   extra={k: v for k, v in d.items() if k not in taken})


@dataclass(frozen=True)
class GateResult:
    run_id: str
    created_at: str  # ISO 8601, UTC
    verdict: Verdict
    reasons: tuple[Reason, ...]
    aggregate: Aggregate
    queries: tuple[QueryResult, ...]
    patterns: tuple[Pattern, ...]
    dataset: dict[str, str]  # name, version, hash, source
    dataset_hash: str
    policy_hash: str
    config_hash: str
    # what config_hash covers (RunConfig.hashed), and how the latency was sampled (not hashed)
    config: RunConfig
    policy: dict[str, Any]
    store: dict[str, Any]  # uri (redacted), version, count — empty for a results file
    timings: RunTimings
    warnings: tuple[str, ...] = ()
    comparison: dict[str, Any] | None = None  # filled by the history layer
    judged: dict[str, Any] | None = None  # judged@K, when the gate was given judgments
    # An excerpt of the text of every chunk the run shows (each query's expected chunks, top-K and
    # results beyond K), once per chunk: chunk id -> excerpt(text). Empty for runs recorded before
    # it existed, and for a results file given without its corpus.
    chunk_texts: Mapping[str, str] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    # With a tune/test split: which part was scored and how many queries each part holds
    # ({"scored": "test", "tune": n, "test": n, "unassigned": n}); None without a split.
    split: dict[str, Any] | None = None
    # The stale-set check's figures (filled by the caller that knows the history and the log).
    staleness: dict[str, Any] | None = None
    checks: tuple[Check, ...] = ()  # the policy's run-level limits, evaluated
    # What the run cost on a store: search latency per query, query embedding time, index bytes
    # (None for a results file, which carries no timings).
    cost: dict[str, Any] | None = None
    # A pipeline's stages (gate --pipeline): mean candidate recall@depth of the first stage (and
    # of each retriever), mean final recall@K, and how many expected chunks the reranker lost.
    stages: dict[str, Any] | None = None
    # When the golden set is too small for its policy's rules: {"queries", "recommended",
    # "findings": [{"rule", "message", "needed"}]} (recallwatch.acceptance.golden_size).
    golden_size: dict[str, Any] | None = None
    # The answers judged (gate --answers/--generator): mean faithfulness, relevance,
    # correctness, the hallucination rate, the failures by kind, and the judge with its measured
    # agreement with people (recallwatch.answers); None when the run judged no answers.
    answers: dict[str, Any] | None = None
    # Freshness (recallwatch.acceptance.freshness): the share of queries whose top K ranks the
    # newest valid version of their facts above the older ones, and the top-K results' ages;
    # ``measured`` False (with a note) without dated chunks. None for runs recorded before it.
    freshness: dict[str, Any] | None = None
    # What serving 1,000 queries costs at the user's prices (gate --prices), with its arithmetic
    # (recallwatch.acceptance.money); None without prices.
    money: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict == "ACCEPT" else 1

    def query(self, query_id: str) -> QueryResult:
        for q in self.queries:
            if q.id == query_id:
                return q
        raise KeyError(query_id)

    def failing(self) -> list[QueryResult]:
        return [q for q in self.queries if not q.passed]

    def split_line(self) -> str | None:
        """One sentence naming the queries the verdict was computed on; None without a split."""
        s = self.split
        if not s:
            return None
        total = s["tune"] + s["test"] + s["unassigned"]
        held = "test" if s["scored"] == "test" else "tune"
        other = "tune" if held == "test" else "test"
        line = (f"verdict computed on the {s[held]} {held} queries of {total} "
                f"(the {s[other]} {other} queries are not scored")
        if s["unassigned"]:
            line += f", nor the {s['unassigned']} without a split"
        return line + ")"

    def to_frame(self, library: Frame = "pandas") -> Any:
        """One row per scored query (pandas or polars): its id, domain, whether it passed and
        which rules it failed, its figures, and the cause the diagnosis named first."""
        from recallwatch.formats.frames import to_frame

        return to_frame([{
            "query_id": q.id, "domain": q.domain, "passed": q.passed,
            "failed_rules": ",".join(q.failed_rules), "recall": q.recall, "quality": q.quality,
            "noise": q.noise, "precision": q.precision, "rr": q.rr, "ndcg": q.ndcg,
            "cause": q.diagnosis[0].cause if q.diagnosis else None,
        } for q in self.queries], library)

    def _repr_html_(self) -> str:
        """The verdict, its reasons, the means and each failing query with its diagnosis, for
        Jupyter (the full report with its plots: ``recallwatch.report.write_report_set``)."""
        from html import escape

        a = self.aggregate
        means = (f"{a.n_queries} queries: mean quality {a.mean_quality:.1f}, recall "
                 f"{a.mean_recall:.3f}, nDCG {a.mean_ndcg:.3f}, MRR {a.mrr:.3f}; "
                 f"{a.failed_queries} failed")
        reasons = "".join(f"<li>[{escape(r.rule)}] {escape(r.message)}</li>"
                          for r in self.reasons)
        rows = "".join(
            f"<tr><td>{escape(q.id)}</td><td>{q.recall:.3f}</td><td>{q.quality:.0f}</td>"
            f"<td>{escape(', '.join(q.failed_rules))}</td>"
            f"<td>{escape('; '.join(d.line() for d in q.diagnosis))}</td></tr>"
            for q in self.failing())
        table = ("<table><thead><tr><th>query</th><th>recall</th><th>quality</th>"
                 f"<th>failed rules</th><th>diagnosis</th></tr></thead><tbody>{rows}</tbody>"
                 "</table>") if rows else ""
        return (f"<div><strong>{escape(self.verdict)}</strong> — {escape(means)}"
                f"{'<ul>' + reasons + '</ul>' if reasons else ''}{table}</div>")

    def to_dict(self) -> dict[str, Any]:
        """The gate's JSON object (its documented keys, plus additions; never renames)."""
        return {**self.to_dict_without_queries(),
                "queries": [q.to_dict() for q in self.queries]}

    def to_dict_without_queries(self) -> dict[str, Any]:
        """:meth:`to_dict` with ``queries`` empty, in its place: what a writer that streams the
        queries one at a time starts from."""
        return {
            "schema_version": self.schema_version,
            "verdict": self.verdict,
            "reasons": [r.to_dict() for r in self.reasons],
            "aggregate": self.aggregate.to_dict(),
            "queries": [],
            "patterns": [p.to_dict() for p in self.patterns],
            "run_id": self.run_id,
            "created_at": self.created_at,
            "dataset": self.dataset,
            "dataset_hash": self.dataset_hash,
            "policy_hash": self.policy_hash,
            "config_hash": self.config_hash,
            "config": self.config.to_dict(),
            "policy": self.policy,
            "store": self.store,
            "timings": self.timings.to_dict(),
            "warnings": list(self.warnings),
            "comparison": self.comparison,
            "judged": self.judged,
            "split": self.split,
            "staleness": self.staleness,
            "checks": [c.to_dict() for c in self.checks],
            "cost": self.cost,
            "chunk_texts": dict(self.chunk_texts),
            "stages": self.stages,
            "golden_size": self.golden_size,
            "answers": self.answers,
            "freshness": self.freshness,
            "money": self.money,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GateResult:
        queries = tuple(
            QueryResult(
                **{**q, "tags": tuple(q["tags"]), "failed_rules": tuple(q["failed_rules"]),
                   "expected": tuple(ExpectedHit(**e) for e in q["expected"]),
                   "top": tuple((t["id"], t["score"]) for t in q["top"]),
                   "beyond_k": tuple((t["id"], t["score"]) for t in q.get("beyond_k", [])),
                   "diagnosis": tuple(Diagnosis(**x) for x in q["diagnosis"]),
                   "anchors": tuple(q.get("anchors", ())),
                   "alternatives": tuple(q.get("alternatives", ())),
                   "twins": tuple(q.get("twins", ())),
                   "groups": None if q.get("groups") is None else tuple(q["groups"]),
                   "permission_leaks": tuple(PermissionLeak(x["id"], tuple(x["acl"]))
                                             for x in q.get("permission_leaks", ()))}
            )
            for q in d["queries"]
        )
        return cls(
            run_id=d["run_id"], created_at=d["created_at"], verdict=d["verdict"],
            reasons=tuple(Reason(r["rule"], r["message"], tuple(r["queries"]))
                          for r in d["reasons"]),
            aggregate=Aggregate(**d["aggregate"]), queries=queries,
            patterns=tuple(Pattern(p["name"], p["message"], tuple(p["queries"]))
                           for p in d.get("patterns", [])),
            dataset=d["dataset"], dataset_hash=d["dataset_hash"], policy_hash=d["policy_hash"],
            config_hash=d["config_hash"], config=RunConfig.from_dict(d["config"]),
            policy=d["policy"], store=d["store"], timings=RunTimings.from_dict(d["timings"]),
            warnings=tuple(d.get("warnings", [])),
            comparison=d.get("comparison"), judged=d.get("judged"),
            chunk_texts=dict(d.get("chunk_texts") or {}),
            schema_version=d.get("schema_version", SCHEMA_VERSION),
            split=d.get("split"), staleness=d.get("staleness"),
            checks=tuple(Check(**c) for c in d.get("checks", [])), cost=d.get("cost"),
            stages=d.get("stages"), golden_size=d.get("golden_size"),
            answers=d.get("answers"), freshness=d.get("freshness"), money=d.get("money"),
        )
