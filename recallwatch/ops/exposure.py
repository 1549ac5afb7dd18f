"""Exposure: how much of what the search shows comes from each group of chunks (a domain, a
label, a year of the documents…), against how much of the corpus that group is and how much of
what the queries should find.

A group's *exposure* is its share of the top-K impressions: for each query, the share of its
top-K results that belong to the group, averaged over the queries (each query weighs the same;
with full top-K lists this is the group's share of all impressions). Beside it:

- its *corpus share*: the share of the corpus's chunks in the group;
- its *relevant share*: for each query with expected chunks, the share of them in the group,
  averaged the same way.

Exposure above the corpus share means the search shows the group more than its size alone
would; above the relevant share, more than the queries' answers call for: "the search favours
recent content" becomes a number with an interval. Intervals are percentile bootstraps over
queries (:func:`recallwatch.stats.bootstrap_ci`, seeded): of the exposure, of exposure − corpus
share (the corpus share held fixed), and of exposure − relevant share (paired per query).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.acceptance.model import GateResult
    from recallwatch.records import Chunk

__all__ = ["CHUNK_FIELDS", "ExposureGroup", "ExposureReport", "Interval", "chunk_group", "exposure"]

# Chunk fields a group can be made of; ``facets.NAME`` names a facet, dates group by year.
CHUNK_FIELDS: tuple[str, ...] = ("doc_id", "domain", "label", "kind", "valid_from", "valid_to")
_NONE = "(none)"
_OUTSIDE = "(not in the corpus)"


def chunk_group(chunk: Chunk, field: str) -> str:
    """The group of ``chunk`` under ``field`` (a date field gives its year)."""
    if field.startswith("facets."):
        if not field.removeprefix("facets.").strip():
            raise UsageError(f"chunk field {field!r} names no facet: write facets.NAME, NAME being "
                             "a key of the chunks' facets (e.g. facets.language)")
        value: Any = chunk.facets.get(field.removeprefix("facets."))
    elif field in CHUNK_FIELDS:
        value = getattr(chunk, field)
    else:
        raise UsageError(f"unknown chunk field {field!r}; valid: {', '.join(CHUNK_FIELDS)} or "
                         "facets.NAME")
    if isinstance(value, date):
        return str(value.year)
    return _NONE if value in (None, "") else str(value)


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class ExposureGroup:
    group: str
    chunks: int  # in the corpus
    corpus_share: float
    relevant_share: float | None  # None when no query has expected chunks
    exposure: Interval
    vs_corpus: Interval  # exposure − corpus share
    vs_relevant: Interval | None  # exposure − relevant share, paired over queries


@dataclass(frozen=True)
class ExposureReport:
    field: str
    run_id: str
    k: int
    queries: int  # with at least one result
    relevant_queries: int  # of those, with expected chunks
    corpus_chunks: int
    level: float
    groups: tuple[ExposureGroup, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def exposure(
    result: GateResult, chunks: Sequence[Chunk], field: str, *, level: float = 0.95,
    seed: int = 0, n_resamples: int = 5000,
) -> ExposureReport:
    """Each group's exposure in ``result``'s top-K, against its share of ``chunks`` (the corpus)
    and of the expected chunks."""
    from recallwatch.stats import bootstrap_ci

    if not chunks:
        raise UsageError("the corpus holds no chunks: nothing to compare the exposure with")
    group_of = {c.id: chunk_group(c, field) for c in chunks}
    queries = [q for q in result.queries if q.top]
    if not queries:
        raise UsageError(f"run {result.run_id} has no query with results")
    sizes: dict[str, int] = {}
    for g in group_of.values():
        sizes[g] = sizes.get(g, 0) + 1
    names = sorted(set(sizes) | {group_of.get(i, _OUTSIDE) for q in queries for i, _ in q.top})
    col = {g: j for j, g in enumerate(names)}
    shown = np.zeros((len(queries), len(names)))  # per query, each group's share of its top-K
    relevant = np.full((len(queries), len(names)), np.nan)  # NaN: no expected chunks
    for r, q in enumerate(queries):
        for i, _ in q.top:
            shown[r, col[group_of.get(i, _OUTSIDE)]] += 1 / len(q.top)
        if q.expected:
            relevant[r] = 0.0
            for e in q.expected:
                relevant[r, col[group_of.get(e.id, _OUTSIDE)]] += 1 / len(q.expected)
    paired = ~np.isnan(relevant[:, 0])

    def ci(a: np.ndarray, b: np.ndarray) -> Interval:
        c = bootstrap_ci(a, b, level=level, seed=seed, n_resamples=n_resamples,
                         method="percentile")
        return Interval(float(np.mean(b - a)), c.low, c.high)

    groups = []
    for g in names:
        j = col[g]
        share = sizes.get(g, 0) / len(group_of)
        x = shown[:, j]
        rel = relevant[paired, j]
        groups.append(ExposureGroup(
            g, sizes.get(g, 0), share, float(rel.mean()) if rel.size else None,
            ci(np.zeros_like(x), x), ci(np.full_like(x, share), x),
            ci(rel, x[paired]) if rel.size else None))
    return ExposureReport(field, result.run_id, max(len(q.top) for q in queries), len(queries),
                          int(paired.sum()), len(group_of), level, tuple(groups))
