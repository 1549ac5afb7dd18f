"""Group gaps: a metric by golden field, gap to the overall mean, bootstrap interval."""

from __future__ import annotations

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult
from recallwatch.errors import UsageError
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.formats.results import RankedList
from recallwatch.ops.groups import group_gaps
from recallwatch.stats import bootstrap_ci

# (domain, tags, language, found?) per query; found → recall 1, quality 100; else 0
QUERIES = {
    "q1": ("legal", ["numeric"], "es", True),
    "q2": ("legal", ["numeric", "table"], "en", True),
    "q3": ("rrhh", [], "es", True),
    "q4": ("rrhh", ["table"], "es", False),
    "q5": ("rrhh", [], "en", False),
}


@pytest.fixture
def case() -> tuple[GateResult, GoldenSet]:
    queries, results = [], {}
    for qid, (domain, tags, lang, found) in QUERIES.items():
        queries.append({"id": qid, "text": qid, "expected": [f"{qid}-e"], "domain": domain,
                        "tags": tags, "language": lang})
        ids = [f"{qid}-e" if found else f"{qid}-z", *(f"{qid}-x{i}" for i in range(9))]
        results[qid] = RankedList(ids, np.linspace(0.9, 0.8, 10))
    golden = GoldenSet.from_dict({"name": "g", "queries": queries})
    # one expected chunk at rank 1 has noise 9: a ceiling of 0.9 lets the found ones pass
    return run_gate(golden, results=results, policy=Policy(noise_ceiling=0.9)), golden


def test_gap_by_domain_on_known_qualities(case: tuple[GateResult, GoldenSet]) -> None:
    result, _ = case
    rep = group_gaps(result, "domain", "quality")
    assert rep.overall == pytest.approx(60.0)  # 100, 100, 100, 0, 0
    legal, rrhh = rep.groups
    assert (legal.group, legal.n, legal.mean, legal.gap) == ("legal", 2, 100.0, 40.0)
    assert (legal.ci_low, legal.ci_high) == (40.0, 40.0)  # no spread: a point
    assert (rrhh.group, rrhh.n) == ("rrhh", 3)
    assert rrhh.mean == pytest.approx(100 / 3) and rrhh.gap == pytest.approx(100 / 3 - 60)
    # the interval is the stats package's percentile bootstrap of mean(group) - overall
    ci = bootstrap_ci(np.full(3, 60.0), np.array([100.0, 0.0, 0.0]), method="percentile",
                      n_resamples=5000)
    assert (rrhh.ci_low, rrhh.ci_high) == (ci.low, ci.high)
    assert rrhh.ci_low <= rrhh.gap <= rrhh.ci_high


def test_tags_put_a_query_in_each_of_its_groups(case: tuple[GateResult, GoldenSet]) -> None:
    rep = group_gaps(case[0], "tags", "recall")
    by = {g.group: (g.n, g.mean) for g in rep.groups}
    assert by == {"numeric": (2, 1.0), "table": (2, 0.5), "(none)": (2, 0.5)}


def test_other_fields_come_from_the_golden_set(case: tuple[GateResult, GoldenSet]) -> None:
    result, golden = case
    rep = group_gaps(result, "language", "passed", golden=golden)
    assert {g.group: (g.n, g.mean) for g in rep.groups} == {"en": (2, 0.5), "es": (3, 2 / 3)}
    with pytest.raises(UsageError, match="needs the golden set"):
        group_gaps(result, "language")


def test_policy_minimum_flags_low_groups_and_metrics_are_checked(
        case: tuple[GateResult, GoldenSet]) -> None:
    rep = group_gaps(case[0], "domain", minimum=50.0)
    assert [g.group for g in rep.groups if g.below_min] == ["rrhh"]
    with pytest.raises(UsageError, match="unknown metric 'mrr'; valid: quality, recall"):
        group_gaps(case[0], "domain", "mrr")  # type: ignore[arg-type]
