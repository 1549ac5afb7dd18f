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
from recallwatch.ops.groups import MIN_INTERVAL_QUERIES, group_gaps
from recallwatch.stats import bootstrap_ci

# (domain, tags, language, found?) per query; found → recall 1, quality 100; else 0
QUERIES = {
    "q1": ("legal", ["numeric"], "es", True),
    "q2": ("legal", ["numeric", "table"], "en", True),
    "q3": ("rrhh", [], "es", True),
    "q4": ("rrhh", ["table"], "es", False),
    "q5": ("rrhh", [], "en", False),
}


def _gate(queries: dict[str, tuple[str, list[str], str, bool]]
          ) -> tuple[GateResult, GoldenSet]:
    golden_queries, results = [], {}
    for qid, (domain, tags, lang, found) in queries.items():
        golden_queries.append({"id": qid, "text": qid, "expected": [f"{qid}-e"], "domain": domain,
                               "tags": tags, "language": lang})
        ids = [f"{qid}-e" if found else f"{qid}-z", *(f"{qid}-x{i}" for i in range(9))]
        results[qid] = RankedList(ids, np.linspace(0.9, 0.8, 10))
    golden = GoldenSet.from_dict({"name": "g", "queries": golden_queries})
    # one expected chunk at rank 1 has noise 9: a ceiling of 0.9 lets the found ones pass
    return run_gate(golden, results=results, policy=Policy(noise_ceiling=0.9)), golden


@pytest.fixture
def case() -> tuple[GateResult, GoldenSet]:
    return _gate(QUERIES)


def test_gap_by_domain_on_known_qualities(case: tuple[GateResult, GoldenSet]) -> None:
    result, _ = case
    rep = group_gaps(result, "domain", "quality")
    assert rep.overall == pytest.approx(60.0)  # 100, 100, 100, 0, 0
    legal, rrhh = rep.groups
    assert (legal.group, legal.n, legal.mean, legal.gap) == ("legal", 2, 100.0, 40.0)
    assert (rrhh.group, rrhh.n) == ("rrhh", 3)
    assert rrhh.mean == pytest.approx(100 / 3) and rrhh.gap == pytest.approx(100 / 3 - 60)
    # 2 and 3 queries: too few for an interval (resampled, 2 equal values give a point)
    assert MIN_INTERVAL_QUERIES == 5
    assert (legal.ci_low, legal.ci_high, rrhh.ci_low, rrhh.ci_high) == (None,) * 4


def test_a_group_of_five_or_more_gets_the_bootstrap_interval() -> None:
    found = [True, False, False, True, False, True]  # quality 100 or 0
    queries = {f"b{i}": ("big", [], "en", f) for i, f in enumerate(found)}
    queries.update({f"s{i}": ("small", [], "en", True) for i in range(4)})
    rep = group_gaps(_gate(queries)[0], "domain", "quality")
    big, small = rep.groups
    overall = 100 * (sum(found) + 4) / 10
    assert rep.overall == pytest.approx(overall) and big.n == 6 and small.n == 4
    # the interval is the stats package's percentile bootstrap of mean(group) - overall
    ci = bootstrap_ci(np.full(6, overall), np.array([100.0 * f for f in found]),
                      method="percentile", n_resamples=5000)
    assert (big.ci_low, big.ci_high) == (ci.low, ci.high)
    assert big.ci_low is not None and big.ci_high is not None
    assert big.ci_low <= big.gap <= big.ci_high and big.ci_low < big.ci_high
    assert (small.ci_low, small.ci_high) == (None, None)


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
