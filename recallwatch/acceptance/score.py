"""Per-query scoring: the gate's recall, quality scale and noise rule, plus rank metrics.

Rank metrics (precision@K, RR, nDCG@K) come from recallwatch.metrics, the same kernels as
``recallwatch eval``, fed with the ranked list as the source returned it (no re-sorting here: a
store's and a pipeline's exact ties already come ordered as the measures order them, id
descending; a results file's order is the user's; see docs/gate.md, "One ranking").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from recallwatch.acceptance.model import ExpectedHit, QueryResult
from recallwatch.acceptance.retrieve import Retrieved
from recallwatch.formats.corpus import GOLD_LABELS
from recallwatch.formats.golden import GoldenQuery
from recallwatch.formats.policy import Policy
from recallwatch.stores.base import Chunk

__all__ = ["GOLD_LABELS", "SCORE_TOLERANCE", "noise_count", "quality_score", "score_queries"]

# Scores of the same chunk computed by two paths (ANN search vs direct scoring) can differ in the
# last float32 bits; a result counts as noise only when it is below the threshold by more than this.
SCORE_TOLERANCE = 1e-6


def quality_score(recall: float, floor: float) -> float:
    """The strict quality scale: 0 below the floor, then linear to 100 at recall 1.

    With the default floor 0.90 this is (recall − 0.90) × 10, shown as 0–100."""
    if recall < floor:
        return 0.0
    if floor >= 1.0:
        return 100.0
    return round((recall - floor) / (1.0 - floor) * 100.0, 9)


def noise_count(top_scores: np.ndarray, threshold: float | None) -> int:
    """Top-K results scoring strictly below the worst expected chunk's score (without
    judgments: :func:`score_queries` also leaves out the results judged relevant)."""
    if threshold is None:
        return 0
    return int(np.count_nonzero(top_scores < threshold - SCORE_TOLERANCE))


def score_queries(
    queries: Sequence[GoldenQuery],
    retrieved: Sequence[Retrieved],
    chunks: Mapping[str, Chunk],
    policy: Policy,
    default_k: int,
    judgments: Mapping[tuple[str, str], int] | None = None,
) -> list[QueryResult]:
    """Score every query. ``judgments`` ((query id, chunk id) -> grade, from `recallwatch label`)
    tell the noise rule which results are relevant (grade > 0: not noise) and which were judged
    irrelevant (grade 0: noise for sure)."""
    ks = [policy.top_k or q.top_k or default_k for q in queries]
    rank_metrics = _rank_metrics(queries, retrieved, ks)
    grades: dict[str, dict[str, int]] = {}
    for (qid, cid), grade in (judgments or {}).items():
        grades.setdefault(qid, {})[cid] = grade
    out = []
    for q, r, k, (precision, rr, ndcg) in zip(queries, retrieved, ks, rank_metrics):
        position = {cid: i + 1 for i, cid in enumerate(r.ids)}
        gold_ids = set(q.gold) | {c for c in q.expected
                                  if c in chunks and chunks[c].label in GOLD_LABELS}
        hits = tuple(
            ExpectedHit(
                id=c, rank=position.get(c), score=r.expected_scores.get(c),
                gold=c in gold_ids, in_top_k=position.get(c, k + 1) <= k,
            )
            for c in q.expected
        )
        found = sum(h.in_top_k for h in hits)
        recall = found / len(q.expected)
        known = [h.score for h in hits if h.score is not None]
        if len(known) == len(hits):
            threshold: float | None = min(known)
        elif r.ids:  # an unscored expected chunk scores at most the list's last score
            threshold = min([*known, float(r.scores[-1])])
        else:
            threshold = None
        top_scores = r.scores[:k]
        judged = grades.get(q.id, {})
        # every alternative of a group answers the query: never noise, counted or not
        relevant = set(q.all_expected) | {c for c, g in judged.items() if g > 0}
        missing_ranks = [h.rank or len(r.ids) + 1 for h in hits if not h.in_top_k]
        deepest = min(max(missing_ranks), len(r.ids) + 1) if missing_ranks else k + 1
        beyond = tuple((cid, float(s)) for cid, s in zip(r.ids[k:deepest - 1],
                                                          r.scores[k:deepest - 1]))
        below = [] if threshold is None else [
            cid for cid, s in zip(r.ids[:k], top_scores)
            if s < threshold - SCORE_TOLERANCE and cid not in relevant]
        noise = len(below)
        unjudged = sum(cid not in judged for cid in below)
        ceiling = policy.ceiling_for(q.domain)
        allowed = Policy.allowed_noise(ceiling, k)
        sparse = len(relevant) < k - allowed
        measured = (policy.noise_unlisted == "irrelevant" or not sparse or unjudged == 0
                    or noise - unjudged > allowed)
        failed = []
        if recall < policy.recall_floor:
            failed.append("recall")
        if measured and noise > allowed:
            failed.append("noise")
        out.append(QueryResult(
            id=q.id, text=q.text, domain=q.domain, tags=q.tags, top_k=k,
            recall=recall, quality=quality_score(recall, policy.recall_floor),
            noise=noise, noise_ceiling=ceiling, allowed_noise=allowed, noise_threshold=threshold,
            precision=precision, rr=rr, ndcg=ndcg, passed=not failed,
            failed_rules=tuple(failed), expected=hits,
            top=tuple((cid, float(s)) for cid, s in zip(r.ids[:k], top_scores)),
            has_gold=bool(gold_ids), waiver=policy.waivers.get(q.id), beyond_k=beyond,
            labels_sparse=sparse, noise_unjudged=unjudged, noise_measured=measured,
        ))
    return out


def _rank_metrics(
    queries: Sequence[GoldenQuery], retrieved: Sequence[Retrieved], ks: Sequence[int]
) -> list[tuple[float, float, float]]:
    """P@K, RR (over the deep list) and nDCG@K per query, one evaluate() call per distinct K."""
    from recallwatch.metrics import Qrels, Run, evaluate

    out: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * len(queries)
    for k in sorted(set(ks)):
        idx = [i for i, kk in enumerate(ks) if kk == k]
        qrels = Qrels.from_dict({queries[i].id: dict.fromkeys(queries[i].expected, 1) for i in idx})
        run = Run.from_ranked({queries[i].id: list(retrieved[i].ids) for i in idx})
        names = [f"P@{k}", "RR", f"nDCG@{k}"]
        res = evaluate(qrels, run, names)
        pos = {qid: j for j, qid in enumerate(res.query_ids)}
        cols = [res.per_query[m] for m in res.per_query]
        by_name = dict(zip([str(m) for m in res.per_query], cols))
        for i in idx:
            j = pos[queries[i].id]
            out[i] = (float(by_name[names[0]][j]), float(by_name[names[1]][j]),
                      float(by_name[names[2]][j]))
    return out
