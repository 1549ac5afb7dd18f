"""judged@K: the share of each query's top-K results that someone has judged.

A gate scores the top K against the golden set's expected chunks; a result nobody judged counts
as not relevant. When unjudged results crowd the top, recall and precision say more about the
gaps in the judgments than about the index: the set needs another pooling round
(``recallwatch label pool``, then judging). A result is judged when it is an expected chunk of the
query or a (query, chunk) pair of the judgments given, whatever its grade.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from recallwatch.acceptance.model import GateResult

__all__ = ["CROWDED_BELOW", "WARN_BELOW", "judged_line", "with_judged"]

WARN_BELOW = 0.8  # warn when the mean judged@K falls under this
CROWDED_BELOW = 0.5  # a query with less than half of its top-K judged is named in the warning


def with_judged(result: GateResult, judged: Collection[tuple[str, str]], *,
                sources: list[str] | None = None) -> GateResult:
    """``result`` with its ``judged`` block (judged@K overall and per query) and, when the mean
    is under :data:`WARN_BELOW`, a warning naming the most crowded queries."""
    pairs = set(judged)
    per_query: dict[str, float] = {}
    for q in result.queries:
        expected = {e.id for e in q.expected}
        top = [cid for cid, _ in q.top]
        hits = sum(1 for cid in top if cid in expected or (q.id, cid) in pairs)
        per_query[q.id] = hits / len(top) if top else 1.0
    mean = sum(per_query.values()) / len(per_query) if per_query else 1.0
    crowded = sorted((v, k) for k, v in per_query.items() if v < CROWDED_BELOW)
    ks = sorted({q.top_k for q in result.queries})
    k = str(ks[0]) if len(ks) == 1 else "K"
    block: dict[str, Any] = {"k": ks[0] if len(ks) == 1 else None, "judged_at_k": mean,
                             "per_query": per_query, "crowded": [c[1] for c in crowded],
                             "warn_below": WARN_BELOW, "judgments": sources or [],
                             "pairs": len(pairs)}
    warnings = list(result.warnings)
    if mean < WARN_BELOW:
        named = ", ".join(f"{qid} {share:.0%}" for share, qid in crowded[:5])
        warnings.append(
            f"judged@{k} is {mean:.2f}: unjudged results crowd the top "
            f"({len(crowded)} quer{'y' if len(crowded) == 1 else 'ies'} with less than half of "
            f"their top {k} judged{': ' + named if named else ''}); the scores count unjudged "
            "results as not relevant, so pool again (`recallwatch label pool`) and judge them")
    return replace(result, judged=block, warnings=tuple(warnings))


def judged_line(block: dict[str, Any]) -> str:
    """The judged block in one line, for the summary of the text reports."""
    k = block.get("k") or "K"
    n = len(block.get("per_query") or {})
    crowded = len(block.get("crowded") or [])
    line = (f"judged@{k} {float(block['judged_at_k']):.2f} (the share of each top {k} that is "
            f"an expected chunk or was judged, from {block.get('pairs', 0)} judged pairs)")
    if crowded:
        line += (f"; {crowded} of {n} quer{'y' if n == 1 else 'ies'} with less than half of "
                 f"their top {k} judged")
    return line
