"""Aggregates and the verdict: ACCEPT or STOP, with reasons that name the rule and the queries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from recallwatch._registry import listed
from recallwatch.acceptance.model import Aggregate, QueryResult, Reason, Verdict
from recallwatch.formats.policy import Policy

__all__ = ["aggregate", "decide"]


def aggregate(queries: Sequence[QueryResult]) -> Aggregate:
    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else 0.0

    failing = [q for q in queries if not q.passed]
    by_domain: dict[str, list[QueryResult]] = defaultdict(list)
    for q in queries:
        by_domain[q.domain or "(none)"].append(q)
    per_domain = {
        d: {
            "n": float(len(qs)),
            "mean_quality": mean([q.quality for q in qs]),
            "mean_recall": mean([q.recall for q in qs]),
            "mean_noise": mean([float(q.noise) for q in qs]),
            "failed": float(sum(not q.passed for q in qs)),
        }
        for d, qs in sorted(by_domain.items())
    }
    return Aggregate(
        n_queries=len(queries),
        mean_quality=mean([q.quality for q in queries]),
        mean_recall=mean([q.recall for q in queries]),
        mean_precision=mean([q.precision for q in queries]),
        mrr=mean([q.rr for q in queries]),
        mean_ndcg=mean([q.ndcg for q in queries]),
        mean_noise=mean([float(q.noise) for q in queries]),
        failed_queries=len(failing),
        gold_failures=sum(q.has_gold for q in failing),
        other_failures=sum(not q.has_gold for q in failing),
        per_domain=per_domain,
    )


def _ids(queries: Sequence[QueryResult]) -> tuple[str, ...]:
    return tuple(q.id for q in queries)


_NAMED = 8  # failing queries a reason's message names; the rest are counted (all in `queries`)


def _named(queries: Sequence[QueryResult]) -> str:
    return listed([f"{q.id} ({q.failure_words()})" for q in queries], _NAMED, "; ")


def decide(queries: Sequence[QueryResult], agg: Aggregate,
           policy: Policy) -> tuple[Verdict, list[Reason]]:
    """Apply the policy. Every STOP reason names its rule and the queries behind it."""
    reasons: list[Reason] = []
    n = len(queries)
    if agg.mean_quality < policy.min_mean_quality:
        below = sorted((q for q in queries if q.quality < 100), key=lambda q: q.quality)
        reasons.append(Reason(
            "mean_quality",
            f"mean quality {agg.mean_quality:.1f} is below {policy.min_mean_quality:g} "
            f"({len(below)} quer{'y' if len(below) == 1 else 'ies'} under 100)",
            _ids(below),
        ))
    failing = [q for q in queries if not q.passed]
    gold_failing = [q for q in failing if q.has_gold]
    if len(gold_failing) > policy.gold_failures_allowed:
        detail = _named(gold_failing)
        found = all("recall" not in q.failed_rules for q in gold_failing)
        reasons.append(Reason(
            "gold_failure",
            f"{len(gold_failing)} failing "
            f"quer{'y expects' if len(gold_failing) == 1 else 'ies expect'} a Gold chunk (a "
            "curated synthesis: a query expecting one may not fail on any rule; allowed "
            f"{policy.gold_failures_allowed})"
            + (", its Gold chunk found: the failure is noise, not recall" if found and
               len(gold_failing) == 1 else
               ", their Gold chunks found: the failures are noise, not recall" if found else "")
            + f": {detail}",
            _ids(gold_failing),
        ))
    other = [q for q in failing if not q.has_gold]
    allowed_other = policy.other_failures_allowed * n
    if len(other) > allowed_other + 1e-9:
        reasons.append(Reason(
            "failure_rate",
            f"{len(other)} non-Gold failing queries ({len(other) / n:.1%} of {n}; "
            f"{sum('recall' in q.failed_rules for q in other)} on recall, "
            f"{sum(q.failed_rules == ('noise',) for q in other)} on the noise rule alone) exceed "
            f"the tolerated {policy.other_failures_allowed:.0%}",
            _ids(other),
        ))
    unwaived = [q for q in other if q.waiver is None]
    if unwaived:
        detail = _named(unwaived)
        reasons.append(Reason(
            "unwaived_failure",
            f"{len(unwaived)} failing quer{'y has' if len(unwaived) == 1 else 'ies have'} no "
            "waiver (a written diagnosis in the policy's waivers that excuses the failure): "
            f"{detail}",
            _ids(unwaived),
        ))
    if policy.min_group_quality is not None:
        low = {d: v["mean_quality"] for d, v in agg.per_domain.items()
               if v["mean_quality"] < policy.min_group_quality}
        if low:
            reasons.append(Reason(
                "group_quality",
                "domains below the minimum group quality "
                f"{policy.min_group_quality:g}: "
                + ", ".join(f"{d} {v:.1f}" for d, v in sorted(low.items())),
                _ids([q for q in queries if (q.domain or "(none)") in low]),
            ))
    return ("STOP" if reasons else "ACCEPT"), reasons
