"""What a gate run produces. Plain frozen data: reports, history and the web read only this."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "CAUSE_ORDER",
    "CAUSE_TITLES",
    "SCHEMA_VERSION",
    "Aggregate",
    "Cause",
    "Diagnosis",
    "ExpectedHit",
    "GateResult",
    "Pattern",
    "QueryResult",
    "Reason",
    "Verdict",
]

SCHEMA_VERSION = 1

Verdict = Literal["ACCEPT", "STOP"]
# Why an expected chunk is missing, checked in this order (the cheapest and most frequent fix
# first): chunking, description, labelling, embedding; plus the noise rule's own cause.
Cause = Literal["chunking", "description", "labelling", "embedding", "noise"]
# How each cause is named to a reader (the JSON keeps the short names above).
CAUSE_TITLES: dict[str, str] = {
    "chunking": "chunking",
    "description": "missing description",
    "labelling": "labelling",
    "embedding": "embedding",
    "noise": "noise",
}
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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tags"] = list(self.tags)
        d["failed_rules"] = list(self.failed_rules)
        d["top"] = [{"id": i, "score": s} for i, s in self.top]
        d["beyond_k"] = [{"id": i, "score": s} for i, s in self.beyond_k]
        d["expected"] = [asdict(e) for e in self.expected]
        d["diagnosis"] = [asdict(x) for x in self.diagnosis]
        return d


@dataclass(frozen=True)
class Reason:
    rule: str
    message: str
    queries: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "message": self.message, "queries": list(self.queries)}


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
    config: dict[str, Any]  # what config_hash covers: embedder fingerprint, source kind, search
    policy: dict[str, Any]
    store: dict[str, Any]  # uri (redacted), version, count — empty for a results file
    timings: dict[str, float]  # seconds: embed, search, other, total
    warnings: tuple[str, ...] = ()
    comparison: dict[str, Any] | None = None  # filled by the history layer
    schema_version: int = SCHEMA_VERSION

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

    def to_dict(self) -> dict[str, Any]:
        """The gate's JSON object (its documented keys, plus additions; never renames)."""
        return {
            "schema_version": self.schema_version,
            "verdict": self.verdict,
            "reasons": [r.to_dict() for r in self.reasons],
            "aggregate": self.aggregate.to_dict(),
            "queries": [q.to_dict() for q in self.queries],
            "patterns": [p.to_dict() for p in self.patterns],
            "run_id": self.run_id,
            "created_at": self.created_at,
            "dataset": self.dataset,
            "dataset_hash": self.dataset_hash,
            "policy_hash": self.policy_hash,
            "config_hash": self.config_hash,
            "config": self.config,
            "policy": self.policy,
            "store": self.store,
            "timings": self.timings,
            "warnings": list(self.warnings),
            "comparison": self.comparison,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GateResult:
        queries = tuple(
            QueryResult(
                **{**q, "tags": tuple(q["tags"]), "failed_rules": tuple(q["failed_rules"]),
                   "expected": tuple(ExpectedHit(**e) for e in q["expected"]),
                   "top": tuple((t["id"], t["score"]) for t in q["top"]),
                   "beyond_k": tuple((t["id"], t["score"]) for t in q.get("beyond_k", [])),
                   "diagnosis": tuple(Diagnosis(**x) for x in q["diagnosis"])}
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
            config_hash=d["config_hash"], config=d["config"], policy=d["policy"],
            store=d["store"], timings=d["timings"], warnings=tuple(d.get("warnings", [])),
            comparison=d.get("comparison"), schema_version=d.get("schema_version", SCHEMA_VERSION),
        )
