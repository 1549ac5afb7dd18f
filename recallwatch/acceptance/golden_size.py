"""Is the golden set large enough for its policy to mean anything? The arithmetic, per rule.

With ``n`` scored queries one query weighs ``1/n`` of every share and mean the policy judges. A
rule whose margin is thinner than one query cannot be met or missed by less than a whole query:

* ``other_failures_allowed`` (5 %): one failing query is ``1/n`` of the set; under
  ``1 / 0.05 = 20`` queries it is already over 5 %, so the tolerance allows no failure at all;
* ``min_mean_quality`` (95): one query scoring 0 lowers the mean by ``100/n`` points; under
  ``100 / (100 - 95) = 20`` queries that alone drops a perfect run below 95;
* a target on a measure (``nDCG@10: 0.8``): one query moves the mean by up to ``1/n``; when that
  exceeds ``1 - target`` one query decides the target;
* ``max_drop``: a paired test over ``n`` queries cannot give a p-value below ``2 / 2**n`` (every
  query moving the same way), times the number of measures after Holm's correction; when that
  stays above 0.05 no drop can ever be shown real, so ``max_drop`` never blocks.

Such rules were set for sets of about :data:`RECOMMENDED` queries (two failures tolerated at 5 %);
a smaller set is warned about, never stopped: the verdict stands, its reader is told what it rests
on.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy

__all__ = ["RECOMMENDED", "SizeFinding", "golden_size", "scored_count", "size_findings",
           "size_warning"]

#: The size of golden set the default rules are meant for.
RECOMMENDED = 50
_ALPHA = 0.05  # the max_drop test's level (recallwatch.acceptance.limits.ALPHA)


@dataclass(frozen=True)
class SizeFinding:
    """One rule the set is too small for: the rule, the sentence with its arithmetic, and the
    fewest queries that would give the rule room."""

    rule: str
    message: str
    needed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def size_findings(n: int, policy: Policy) -> list[SizeFinding]:
    """Every rule of ``policy`` that ``n`` scored queries are too few for (empty when none)."""
    if n <= 0:
        return []
    return [*_share_rule(n, policy), *_targets(n, policy), *_drops(n, policy)]


def _queries(n: int) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


def _share_rule(n: int, policy: Policy) -> list[SizeFinding]:
    out = []
    share = policy.other_failures_allowed
    if 0 < share < 1 and n * share < 1 - 1e-9:
        needed = math.ceil(1 / share - 1e-9)
        out.append(SizeFinding(
            "failure_rate",
            f"with {_queries(n)} one failing query is {1 / n:.0%} of the set: the "
            f"{share:.0%} tolerance of other failing queries (other_failures_allowed) cannot be "
            f"met or missed by less than one query, so it tolerates none; it tolerates one from "
            f"{needed} queries on", needed))
    margin = 100.0 - policy.min_mean_quality
    if 0 < margin < 100 and 100.0 / n > margin + 1e-9:
        needed = math.ceil(100.0 / margin - 1e-9)
        out.append(SizeFinding(
            "mean_quality",
            f"with {_queries(n)} one query scoring 0 lowers the mean quality by "
            f"{100.0 / n:.1f} points, more than the {margin:g} between a perfect run and "
            f"min_mean_quality {policy.min_mean_quality:g}: one failing query decides the "
            f"rule; from {needed} queries on it takes more than one", needed))
    return out


def _targets(n: int, policy: Policy) -> list[SizeFinding]:
    out = []
    for name, target in policy.limits.targets.items():
        margin = 1.0 - target
        if margin > 0 and 1.0 / n > margin + 1e-9:
            needed = math.ceil(1.0 / margin - 1e-9)
            out.append(SizeFinding(
                "target",
                f"target {name} {target:g}: with {_queries(n)} one query moves the mean by up "
                f"to {1.0 / n:.2f}, more than the {margin:.2f} between a perfect mean and the "
                f"target, so one query decides it; from {needed} queries on it takes more than "
                "one", needed))
    return out


def _drops(n: int, policy: Policy) -> list[SizeFinding]:
    m = len(policy.limits.max_drop)
    if not m:
        return []
    smallest = min(1.0, m * 2.0 ** (1 - n))
    if smallest <= _ALPHA:
        return []
    needed = math.ceil(1 + math.log2(m / _ALPHA) - 1e-9)
    tested = f"{m} measures (Holm's correction)" if m > 1 else "1 measure"
    return [SizeFinding(
        "max_drop",
        f"max_drop can never block with {_queries(n)}: the smallest p-value a paired test over "
        f"{n} queries can give is {smallest:.3g} over {tested}, above {_ALPHA:g}, so no drop "
        f"can be told from chance; that takes at least {needed} queries", needed)]


def golden_size(n: int, policy: Policy) -> dict[str, Any] | None:
    """What the gate JSON says of the set's size (``golden_size``): None when the set is large
    enough for every rule, else ``{"queries", "recommended", "findings": [{rule, message,
    needed}]}``."""
    findings = size_findings(n, policy)
    if not findings:
        return None
    return {"queries": n, "recommended": RECOMMENDED,
            "findings": [f.to_dict() for f in findings]}


def size_warning(n: int, policy: Policy) -> str | None:
    """One warning sentence for reports: every finding, then how large a set gives the rules
    room."""
    findings = size_findings(n, policy)
    if not findings:
        return None
    share = policy.other_failures_allowed
    room = (f" (at {share:.0%}, {RECOMMENDED} queries tolerate "
            f"{math.floor(RECOMMENDED * share + 1e-9)} failing ones)" if share > 0 else "")
    return (f"the golden set is too small for its policy ({_queries(n)} scored): "
            + "; ".join(f.message for f in findings)
            + f". Rules like these are meant for sets of about {RECOMMENDED} queries or "
            f"more{room}: add queries")


def scored_count(golden: GoldenSet) -> int:
    """How many queries a gate scores by default: the test part of a set split into tune and
    test, else every query."""
    if not golden.has_split:
        return len(golden.queries)
    return sum(q.split == "test" for q in golden.queries) or len(golden.queries)
