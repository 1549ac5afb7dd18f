"""A pipeline as the gate's source: its final lists are judged; its stages are reported.

The gate searches the pipeline (every retriever, the fusion, the reranker) and scores the final
lists as it scores a store's. Beside the verdict it reports each stage: the candidate recall of
the first stage (the share of expected chunks among the fused candidates, at the pipeline's
depth), the final recall@K, and per query which expected chunks the reranker lost (they were
candidates, but not in the final top K) and which were never retrieved at all.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._progress import progress
from recallwatch.acceptance.model import GateResult, RunConfig
from recallwatch.acceptance.retrieve import Retrieved, Timings, latency_rows
from recallwatch.embedders.base import EmbeddingTokens, query_tokens, reported_tokens
from recallwatch.errors import DatasetError
from recallwatch.formats.golden import GoldenQuery, GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.records import Chunk
from recallwatch.retrievers.base import Hit, SupportsChunks
from recallwatch.retrievers.http import redirect_notes
from recallwatch.retrievers.pipeline import Pipeline, PipelineRun
from recallwatch.retrievers.store import StoreRetriever
from recallwatch.retrievers.tune import Tuned
from recallwatch.stores.base import SEARCH_BLOCK

__all__ = ["PipelineSource", "with_stages", "write_runs"]


@dataclass
class PipelineSource:
    pipeline: Pipeline
    corpus: dict[str, Chunk] = field(default_factory=dict)  # --corpus: chunk metadata
    name: str = "<pipeline>"
    timings: Timings = field(default_factory=Timings)
    # every query searched, by text: the stages and --runs-out read them after the run
    runs: dict[str, tuple[list[Hit], list[Hit], dict[str, list[Hit]]]] = field(
        default_factory=dict)

    def retrieve(self, queries: Sequence[GoldenQuery], depth: int) -> list[Retrieved]:
        self.check_exists(queries)
        texts = [q.text for q in queries]
        timed = set(latency_rows(len(texts)))
        rest = [i for i in range(len(texts)) if i not in timed]
        embedders = self._embedders()
        before = [reported_tokens(e) for e in embedders]
        t0 = time.perf_counter()
        finals: dict[int, list[Hit]] = {}
        with progress(len(texts), f"searching the pipeline ({len(texts):,} queries)") as advance:
            for start in range(0, len(rest), SEARCH_BLOCK):
                rows = rest[start:start + SEARCH_BLOCK]
                block = [texts[i] for i in rows]
                self._keep(block, self.pipeline.search(block, depth), rows, finals)
                advance(len(rows))
            # latency as a user meets it: one call per query, on up to 100 queries of the set
            for i in sorted(timed):
                s0 = time.perf_counter()
                run = self.pipeline.search([texts[i]], depth)
                self.timings.search_each.append(time.perf_counter() - s0)
                self._keep([texts[i]], run, [i], finals)
                advance()
        self.timings.search += time.perf_counter() - t0
        self._count_tokens(embedders, texts, before)
        out = []
        for i, q in enumerate(queries):
            hits = finals[i]
            wanted = set(q.expected)
            out.append(Retrieved([c for c, _ in hits],
                                 np.asarray([s for _, s in hits], dtype=np.float64),
                                 {c: s for c, s in hits if c in wanted}))
        return out

    def _embedders(self) -> list[Any]:
        """The embedders of the pipeline's stores, each of which embedded every query once;
        a python: or HTTP retriever's embedding is its own, not seen from here."""
        return [r.embedder for r in self.pipeline.retrievers.values()
                if isinstance(r, StoreRetriever)]

    def _count_tokens(self, embedders: list[Any], texts: list[str],
                      before: list[EmbeddingTokens | None]) -> None:
        """The queries' embedding tokens, summed over the stores' embedders (each embedded
        every query once), as the store source counts them; not counted when an embedder's
        tokens are not known or, with several embedders, some of their replies told none or
        they are not all hosted or all local (one price for their sum)."""
        counted = [query_tokens(e, texts, b) for e, b in zip(embedders, before, strict=True)]
        known = [c for c in counted if c is not None]
        if not known or len(known) < len(counted):
            return
        total = known[0]
        if len(known) > 1:
            if any(c.unknown for c in known) or len({c.hosted for c in known}) > 1:
                return
            total = EmbeddingTokens(texts=total.texts, tokens=sum(c.tokens for c in known),
                                    source=" and ".join(dict.fromkeys(c.source for c in known)),
                                    hosted=total.hosted)
        held = self.timings.embed_tokens
        self.timings.embed_tokens = total if held is None else held + total

    def _keep(self, texts: list[str], run: PipelineRun, rows: list[int],
              finals: dict[int, list[Hit]]) -> None:
        for j, (text, row) in enumerate(zip(texts, rows)):
            finals[row] = run.final[j]
            self.runs[text] = (run.fused[j], run.final[j],
                               {n: lists[j] for n, lists in run.per_retriever.items()})

    def _holders(self) -> list[Any]:
        return [r for r in self.pipeline.retrievers.values() if isinstance(r, SupportsChunks)]

    def check_exists(self, queries: Sequence[GoldenQuery]) -> None:
        """With a store, a BM25 corpus or --corpus: an expected chunk none holds is a dataset
        error, not a retrieval failure. With none of them there is nothing to check against."""
        if not self.corpus and not self._holders():
            return
        expected = list(dict.fromkeys(c for q in queries for c in q.expected))
        absent = [c for c in expected if c not in self.chunks(expected)]
        if absent:
            raise DatasetError(
                f"{len(absent)} expected chunk id(s) are in none of the pipeline's stores or "
                f"corpora: {', '.join(absent[:10])}{' …' if len(absent) > 10 else ''}",
                hint="fix the golden set or ingest the missing chunks; this is a dataset error, "
                "not a retrieval failure")

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        found = {c: self.corpus[c] for c in ids if c in self.corpus}
        for r in self._holders():
            wanted = [c for c in ids if c not in found]
            if not wanted:
                break
            found.update(r.chunks(wanted))
        return {c: found[c] for c in ids if c in found}

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        if not doc_ids:
            return []
        if self.corpus:
            wanted = set(doc_ids)
            return [c for c in self.corpus.values() if c.doc_id in wanted]
        for r in self._holders():
            return list(r.siblings(doc_ids))
        return []

    def describe(self) -> dict[str, Any]:
        return {"pipeline": self.name, "retrievers": {
            n: r.describe() for n, r in self.pipeline.retrievers.items()}}

    def config(self) -> RunConfig:
        return RunConfig("pipeline", pipeline=self.pipeline.describe())

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        for r in self.pipeline.retrievers.values():
            if isinstance(r, StoreRetriever):
                return np.asarray(r.embedder.embed_documents(list(texts)), dtype=np.float32)
        return None

    def index_bytes(self) -> int | None:
        return None


def tune_on_split(pipeline: Pipeline, golden: GoldenSet, policy: Policy) -> Tuned:
    """Choose the pipeline's wsum weights on the golden set's tune queries (grid search on mean
    recall@K) and set them; the test queries are never read."""
    from recallwatch.errors import InputError
    from recallwatch.retrievers.tune import tune_weights

    spec = pipeline.spec
    if spec.fuse is None or spec.fuse.method != "wsum":
        raise InputError(source=spec.source, field="fuse.method",
                         expected="wsum (the method with weights to tune)",
                         found=None if spec.fuse is None else spec.fuse.method)
    tune = [q for q in golden.queries if q.split == "tune" and q.all_expected]
    if not tune:
        raise InputError(source=golden.source, field="split",
                         expected="queries marked `split: tune` to choose the weights on",
                         found=0, hint="`recallwatch golden split` assigns them")
    texts = [q.text for q in tune]
    runs = {n: [hits[:spec.depth] for hits in r.search(texts, spec.depth)]
            for n, r in pipeline.retrievers.items()}
    k = policy.top_k or golden.top_k
    tuned = tune_weights(runs, [list(q.all_expected) for q in tune], k=k, norm=spec.fuse.norm)
    pipeline.spec = replace(spec, fuse=replace(spec.fuse, weights=tuned.weights))
    return tuned


def with_stages(result: GateResult, source: PipelineSource,
                tuned: Tuned | None = None) -> GateResult:
    """The result with each query's stages and their means (``GateResult.stages``), and the
    tuned weights when they were chosen on the tune split."""
    spec = source.pipeline.spec
    queries = []
    cand: list[float] = []
    final: list[float] = []
    per_retriever: dict[str, list[float]] = {n: [] for n in spec.retrievers}
    lost_total = never_total = 0
    for q in result.queries:
        fused, _, per = source.runs.get(q.text, ([], [], {}))
        expected = [h.id for h in q.expected]
        if not expected:
            queries.append(q)
            continue
        candidates = {c for c, _ in fused}
        in_top = {h.id for h in q.expected if h.in_top_k}
        lost = [c for c in expected if c in candidates and c not in in_top]
        never = [c for c in expected if c not in candidates]
        lost_total += len(lost)
        never_total += len(never)
        c_recall = sum(c in candidates for c in expected) / len(expected)
        cand.append(c_recall)
        final.append(q.recall)
        for name in per_retriever:
            got = {c for c, _ in per.get(name, [])}
            per_retriever[name].append(sum(c in got for c in expected) / len(expected))
        stage = {"candidate_recall": c_recall, "lost_by_reranker": lost if spec.rerank else [],
                 "never_retrieved": never, "lost_after_first_stage": lost}
        queries.append(replace(q, stage=stage))
    stages: dict[str, Any] = {
        "depth": spec.depth, "fused": spec.fuse is not None, "reranked": spec.rerank is not None,
        "candidate_recall": _mean(cand), "final_recall": _mean(final),
        "retriever_recall": {n: _mean(v) for n, v in per_retriever.items()},
        "lost_by_reranker": lost_total if spec.rerank else 0, "never_retrieved": never_total,
    }
    if tuned is not None:
        stages["tuned"] = tuned.to_dict()
    return replace(result, queries=tuple(queries), stages=stages,
                   warnings=(*result.warnings,
                             *redirect_notes(source.pipeline.retrievers.values())))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def write_runs(source: PipelineSource, queries: Sequence[tuple[str, str]], out: Path) -> list[Path]:
    """``out/<name>.run`` for each retriever and ``out/fused.run``: TREC run files (query id,
    Q0, chunk id, rank, score, run tag = the name), each at the pipeline's depth. ``queries``
    are the (id, text) pairs of the scored queries."""
    from recallwatch._files import output_dir
    from recallwatch.formats.trec import write_run

    output_dir(out, "--runs-out")
    names = [*source.pipeline.spec.retrievers, "fused"]
    written = []
    for name in names:
        qids: list[str] = []
        ids: list[str] = []
        ranks: list[int] = []
        scores: list[float] = []
        for qid, text in queries:
            fused, _, per = source.runs.get(text, ([], [], {}))
            hits = fused if name == "fused" else per.get(name, [])
            for rank, (cid, score) in enumerate(hits, 1):
                qids.append(qid)
                ids.append(cid)
                ranks.append(rank)
                scores.append(score)
        path = out / f"{name}.run"
        write_run(path, qids, ids, ranks, scores, tag=name)
        written.append(path)
    return written



def stages_line(stages: dict[str, Any], top_k: int | None = None) -> str:
    """The stages in one line: first-stage candidate recall (fused, then each retriever's),
    final recall@K, and how many expected chunks the reranker lost or nobody retrieved."""
    def fig(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    first = "fused candidates" if stages.get("fused") else "candidates"
    each = ", ".join(f"{n} {fig(v)}" for n, v in stages.get("retriever_recall", {}).items())
    parts = [f"pipeline stages: candidate recall@{stages['depth']} ({first}) "
             f"{fig(stages.get('candidate_recall'))}" + (f" [{each}]" if each else ""),
             f"final recall@{top_k or 'K'} {fig(stages.get('final_recall'))}"]
    if stages.get("reranked"):
        parts.append(f"lost by the reranker {stages.get('lost_by_reranker', 0)}")
    parts.append(f"never retrieved {stages.get('never_retrieved', 0)}")
    tuned = stages.get("tuned")
    if tuned:
        weights = ", ".join(f"{n} {w:.2f}" for n, w in tuned["weights"].items())
        parts.append(f"wsum weights chosen on the {tuned['queries']} tune queries: {weights} "
                     f"(mean recall@{tuned['top_k']} {tuned['mean_recall']:.3f}, best of "
                     f"{tuned['tried']} tried)")
    return " · ".join(parts)


def stage_lines(stage: dict[str, Any] | None) -> list[str]:
    """A failing query's stage notes: the expected chunks the reranker lost (they were
    candidates) and the ones no retriever found."""
    if not stage:
        return []
    out = []
    if stage.get("lost_by_reranker"):
        out.append(f"lost by the reranker: {', '.join(stage['lost_by_reranker'])} (in the "
                   "first stage's candidates, not in the final top K)")
    if stage.get("never_retrieved"):
        out.append(f"never retrieved: {', '.join(stage['never_retrieved'])} (in no "
                   "retriever's candidates: no fusion or reranker can bring it back)")
    return out
