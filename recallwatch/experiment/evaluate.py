"""Judging one built variant: its pipeline (dense, BM25 or both fused, then an optional reranker)
searched by the gate on the golden set, part by part (tune and test when the set is split).

Everything a variant's outcome holds is plain data, so a Ray worker can return it.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recallwatch.experiment.build import Build
from recallwatch.experiment.plan import Plan, VariantSpec

if TYPE_CHECKING:
    from recallwatch.acceptance.gate import Part
    from recallwatch.acceptance.model import GateResult
    from recallwatch.retrievers.pipeline import PipelineSpec

__all__ = ["METRICS", "PartResult", "VariantOutcome", "evaluate_variant", "judged_block",
           "pipeline_spec"]

#: results.json's metric names and the per-query field of the gate each one is the mean of.
METRICS: dict[str, str] = {"mean_quality": "quality", "mean_recall": "recall",
                           "mean_ndcg": "ndcg", "mrr": "rr", "mean_fact_recall": "fact_recall"}


@dataclass(frozen=True)
class PartResult:
    """The gate on one part of the golden set (``tune``, ``test`` or ``all``)."""

    verdict: str
    metrics: dict[str, float | None]  # METRICS, and judged_at_k
    per_query: dict[str, dict[str, float]]  # query id -> METRICS field (and "judged") -> value
    failed_queries: int
    candidate_recall: float | None  # of the first stage, at the pipeline's depth
    cost: dict[str, Any] | None
    # the variant's answers judged (the plan's answers: section), as results.json keeps them
    answers: dict[str, Any] | None = None
    # the gate's result, kept until its answers are judged (recallwatch.experiment.answers)
    gate: GateResult | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class VariantOutcome:
    name: str
    config: dict[str, Any]
    build: dict[str, Any]
    parts: dict[str, PartResult]
    ingest_seconds: float | None
    store_bytes: int | None
    seconds: float
    warnings: tuple[str, ...] = field(default=())

    def cost(self) -> dict[str, Any]:
        """Ingest time, bytes on disk, and search latency p50/p99 (one call per query)."""
        timed = [p.cost for p in self.parts.values() if p.cost]
        out: dict[str, Any] = {"ingest_seconds": self.ingest_seconds,
                               "store_bytes": self.store_bytes,
                               "search_p50_ms": None, "search_p99_ms": None,
                               "latency_queries": 0}
        if timed:
            # the part with the most timed queries speaks for the variant
            best = max(timed, key=lambda c: int(c.get("queries", 0)))
            out.update(search_p50_ms=best["search_p50_ms"], search_p99_ms=best["search_p99_ms"],
                       latency_queries=best.get("queries", 0))
        return out


def pipeline_spec(plan: Plan, variant: VariantSpec, build: Build) -> PipelineSpec:
    """The pipeline of a built variant, checked as a pipeline file is (errors name the plan)."""
    from recallwatch.retrievers.pipeline import PipelineSpec

    retrievers: dict[str, str] = {}
    if variant.dense:
        assert build.store_uri is not None  # a dense variant's build always has a store
        retrievers["dense"] = build.store_uri
    if variant.retrieval in ("bm25", "hybrid"):
        retrievers["bm25"] = f"bm25:{build.corpus_file.as_posix()}"
    data: dict[str, Any] = {"retrievers": retrievers, "depth": plan.depth}
    if variant.fuse is not None:
        data["fuse"] = variant.fuse
    if variant.rerank is not None:
        data["rerank"] = variant.rerank
    return PipelineSpec.from_mapping(data, source=f"{plan.source}: variant {variant.name!r}",
                                     base_dir=plan.base_dir)


def evaluate_variant(plan: Plan, variant: VariantSpec, build: Build) -> VariantOutcome:
    """Search the variant's pipeline and run the gate on every part of the golden set."""
    from recallwatch.acceptance.gate import Gate
    from recallwatch.acceptance.pipeline import PipelineSource, with_stages
    from recallwatch.formats.corpus import read_corpus
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.judging import judged_pairs
    from recallwatch.formats.policy import load_policy
    from recallwatch.retrievers.pipeline import Pipeline

    start = time.perf_counter()
    golden = load_golden(plan.golden)
    policy = load_policy(plan.policy)
    chunks = {c.id: c for c in read_corpus(build.corpus_file).chunks}
    parts: tuple[Part, ...] = ("tune", "test") if golden.has_split else ("all",)
    out: dict[str, PartResult] = {}
    warnings: list[str] = []
    judgments = judged_pairs(plan.judgments) if plan.judgments else None
    with Pipeline.from_spec(pipeline_spec(plan, variant, build), base_dir=plan.base_dir) as pipe:
        for part in parts:
            source = PipelineSource(pipe, corpus=chunks, name=variant.name)
            result = with_stages(Gate(golden, policy, part=part, judgments=judgments).run(source),
                                 source)
            out[part] = _part(result, judgments or {}, keep=plan.answers is not None)
            warnings += [w for w in result.warnings if w not in warnings]
    return VariantOutcome(variant.name, variant.config(), build.to_dict(), out,
                          build.ingest_seconds, build.store_bytes,
                          time.perf_counter() - start, tuple(warnings))


def judged_block(result: GateResult, judgments: Collection[tuple[str, str]]) -> dict[str, Any]:
    """judged@K of a variant's gate: the share of each top K that is labelled, i.e. an expected
    chunk of the query, a chunk one of its content anchors resolves to on this chunking (it holds
    the quoted fact), or a (query, chunk) pair of the plan's judgments."""
    from recallwatch.acceptance.judged import with_judged

    pairs = set(judgments) | {(q.id, c) for q in result.queries for a in q.anchors
                              for c in a.get("chunks", ())}
    block: dict[str, Any] = with_judged(result, pairs).judged or {}
    return block


def _part(result: GateResult, judgments: Collection[tuple[str, str]], *,
          keep: bool = False) -> PartResult:
    judged = judged_block(result, judgments)
    per_query: dict[str, dict[str, float]] = {}
    for q in result.queries:
        row = {f: float(v) for f in METRICS.values()
               if (v := getattr(q, f)) is not None}
        row["judged"] = float(judged["per_query"][q.id])
        per_query[q.id] = row
    agg = result.aggregate
    metrics: dict[str, float | None] = {
        "mean_quality": agg.mean_quality, "mean_recall": agg.mean_recall,
        "mean_ndcg": agg.mean_ndcg, "mrr": agg.mrr, "mean_fact_recall": agg.mean_fact_recall,
        "judged_at_k": judged["judged_at_k"]}
    stages = result.stages or {}
    return PartResult(result.verdict, metrics, per_query, agg.failed_queries,
                      stages.get("candidate_recall"), result.cost,
                      gate=result if keep else None)
