"""Group gaps (bias across groups): a per-query metric of a gate run, disaggregated by a
golden field, with each group's gap to the overall mean and a bootstrap interval of that gap.

Fields: ``domain`` and ``tags`` come with the run (a query with several tags is in each of its
tags' groups); any other golden field (``language``, ``source``…) is read from the golden set.
The gap's interval is the bootstrap interval of ``mean(group) − overall mean`` (the overall mean
held fixed), from :func:`recallwatch.stats.bootstrap_ci`, seeded. A group of fewer than
:data:`MIN_INTERVAL_QUERIES` queries gets none (``None``): resampling one to four values gives an
interval of no width, or one that says nothing, never the uncertainty of the gap.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.acceptance.model import GateResult, QueryResult
    from recallwatch.formats.golden import GoldenSet

__all__ = ["GROUP_METRICS", "MIN_INTERVAL_QUERIES", "GroupGap", "GroupMetric", "GroupReport",
           "group_gaps"]

GroupMetric = Literal["quality", "recall", "precision", "rr", "ndcg", "noise", "passed"]
GROUP_METRICS: tuple[str, ...] = get_args(GroupMetric)
_NONE = "(none)"
#: The fewest queries a group needs for an interval of its gap.
MIN_INTERVAL_QUERIES = 5


@dataclass(frozen=True)
class GroupGap:
    group: str
    n: int
    mean: float
    gap: float  # mean - overall mean
    ci_low: float | None  # of the gap; None: too few queries for an interval
    ci_high: float | None
    below_min: bool  # under the policy's min_group_quality (metric "quality" only)


@dataclass(frozen=True)
class GroupReport:
    field: str
    metric: str
    overall: float
    n: int
    groups: tuple[GroupGap, ...]
    level: float
    minimum: float | None
    run_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _value(q: QueryResult, metric: GroupMetric) -> float:
    return float(q.passed) if metric == "passed" else float(getattr(q, metric))


def _keys(q: QueryResult, field: str, golden: GoldenSet | None) -> list[str]:
    if field == "domain":
        return [q.domain or _NONE]
    if field == "tags":
        return list(q.tags) or [_NONE]
    if golden is None:
        raise UsageError(f"grouping by {field!r} needs the golden set (--golden FILE): a run "
                         "carries only domain and tags")
    try:
        gq = golden.query(q.id)
    except KeyError:
        raise UsageError(f"query {q.id!r} of the run is not in the golden set "
                         f"{golden.source or golden.name}") from None
    value = gq.extra.get(field) if field not in ("id", "text") else getattr(gq, field)
    return [str(value) if value is not None else _NONE]


def group_gaps(
    result: GateResult, field: str, metric: GroupMetric = "quality", *,
    golden: GoldenSet | None = None, level: float = 0.95, seed: int = 0,
    n_resamples: int = 5000, minimum: float | None = None,
) -> GroupReport:
    from recallwatch.stats import bootstrap_ci

    if metric not in GROUP_METRICS:
        raise UsageError(f"unknown metric {metric!r}; valid: {', '.join(GROUP_METRICS)}")
    if not result.queries:
        raise UsageError(f"run {result.run_id} has no queries")
    values = {q.id: _value(q, metric) for q in result.queries}
    overall = float(np.mean(list(values.values())))
    members: dict[str, list[float]] = {}
    for q in result.queries:
        for key in _keys(q, field, golden):
            members.setdefault(key, []).append(values[q.id])
    groups = []
    for key, vals in sorted(members.items()):
        arr = np.asarray(vals, dtype=np.float64)
        low = high = None
        if arr.size >= MIN_INTERVAL_QUERIES:
            ci = bootstrap_ci(np.full(arr.size, overall), arr, level=level, seed=seed,
                              n_resamples=n_resamples, method="percentile")
            low, high = ci.low, ci.high
        mean = float(arr.mean())
        groups.append(GroupGap(key, arr.size, mean, mean - overall, low, high,
                               minimum is not None and metric == "quality" and mean < minimum))
    return GroupReport(field, metric, overall, len(result.queries), tuple(groups), level,
                       minimum, result.run_id)
