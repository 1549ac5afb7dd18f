"""Trends over runs: slow degradation vs one step, per-domain decline, noise creeping up (each
history on a SQLite file and on PostgreSQL)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from recallwatch.acceptance.model import GateResult
from recallwatch.errors import UsageError
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.history import History, trend
from recallwatch.history.trend import analyse_series
from tests.history.helpers import gate_run, golden_set


def _record(db: str, runs: list[GateResult]) -> None:
    with History(db) as h:
        for r in runs:
            h.record(r)


def _losing(g: GoldenSet, n_bad: int, *, only: str | None = None) -> GateResult:
    """A run where the first ``n_bad`` queries (of domain ``only``, if given) lose one of their
    two expected chunks (quality 0 for that query, recall 0.5)."""
    bad = [q.id for q in g.queries if only is None or q.domain == only][:n_bad]
    return gate_run(g, {qid: {f"{qid}_b": 15} for qid in bad})


def test_slow_degradation_is_named_as_silent_staleness(history_at: str) -> None:
    g = golden_set(40)
    runs = [_losing(g, n) for n in (0, 1, 1, 2, 3, 3, 4, 5)]  # small steps, always down
    _record(history_at, runs)
    with History(history_at) as h:
        t = trend(h)
    q = t.series["mean_quality"]
    values = [r.aggregate.mean_quality for r in runs]
    ref = stats.linregress(np.arange(len(values)), values)
    assert q.slope == pytest.approx(ref.slope) and q.slope_p == pytest.approx(ref.pvalue)
    assert q.tau == pytest.approx(stats.kendalltau(np.arange(len(values)), values).statistic)
    assert q.direction == "down" and q.first == 100.0 and q.last == pytest.approx(87.5)
    assert [p.name for p in t.patterns] == ["slow_degradation"]
    assert "content going stale unnoticed" in t.patterns[0].message
    assert "sources out of sync" in t.patterns[0].message


def test_one_big_drop_is_a_step_not_slow_degradation(history_at: str) -> None:
    g = golden_set(40)
    _record(history_at, [_losing(g, n) for n in [0] * 5 + [8] * 5])
    with History(history_at) as h:
        t = trend(h)
    assert t.series["mean_quality"].direction == "down"
    assert [p.name for p in t.patterns] == ["step_regression"]
    assert t.series["mean_quality"].largest_drop == pytest.approx(20.0)
    assert t.series["mean_quality"].largest_drop_run == t.runs[5].run_id


def test_a_stable_history_has_no_pattern(history_at: str) -> None:
    g = golden_set(40)
    _record(history_at, [_losing(g, n) for n in (1, 2, 1, 0, 2, 1, 1, 2)])
    with History(history_at) as h:
        t = trend(h)
    assert all(s.direction == "flat" for s in t.series.values())
    assert t.patterns == ()


def test_too_few_runs_never_make_a_trend(history_at: str) -> None:
    g = golden_set(40)
    _record(history_at, [_losing(g, n) for n in (0, 4, 8, 12)])
    with History(history_at) as h:
        t = trend(h)
    assert t.series["mean_quality"].direction == "too_few_runs" and t.patterns == ()
    assert t.series["mean_quality"].describe().startswith(
        "mean quality: 100.0 → 70.0 (-30.0) over 4 runs: too few runs to call a trend")


def test_two_runs_from_94_9_to_100_show_the_change_not_a_flat_slope(history_at: str) -> None:
    # the example knowledge base's story: 4 of 78 queries fail, then the fix makes all pass
    g = golden_set(78)
    _record(history_at, [_losing(g, 4), _losing(g, 0)])
    with History(history_at) as h:
        t = trend(h)
    q = t.series["mean_quality"]
    assert q.first == pytest.approx(100 * 74 / 78) and q.last == 100.0
    assert q.slope == pytest.approx(100 / 78 * 4)  # the line through two points: the change
    assert q.direction == "too_few_runs"
    assert q.describe() == ("mean quality: 94.9 → 100.0 (+5.1) over 2 runs: too few runs to "
                            "call a trend (at least 5 needed)")
    assert t.series["mean_recall"].describe() == (
        "mean recall: 0.974 → 1.000 (+0.026) over 2 runs: too few runs to call a trend (at "
        "least 5 needed)")


def test_enough_runs_without_a_significant_move_say_so() -> None:
    s = analyse_series("mean_noise", [1.0, 1.5, 1.0, 1.5, 1.2], [f"r{i}" for i in range(5)])
    assert s.direction == "flat"
    assert s.describe().startswith("mean noise: 1.00 → 1.20 (+0.20) over 5 runs; slope ")
    assert s.describe().endswith(": no significant trend")


def test_one_domain_degrading_is_named(history_at: str) -> None:
    g = golden_set(60, domains=("legal", "rrhh", "faq"))
    _record(history_at, [_losing(g, n, only="legal") for n in range(7)])
    with History(history_at) as h:
        t = trend(h)
    assert set(t.per_domain) == {"legal", "rrhh", "faq"}
    assert t.per_domain["legal"]["mean_quality"].direction == "down"
    assert t.per_domain["rrhh"]["mean_quality"].direction == "flat"
    named = [(p.name, p.domain) for p in t.patterns]
    assert ("domain_degradation", "legal") in named
    assert all(d in (None, "legal") for _, d in named)
    msg = next(p.message for p in t.patterns if p.name == "domain_degradation")
    assert msg.startswith("domain legal degrading: mean quality 100.0 → 70.0 over 7 runs")
    assert "not at the index as a whole" in msg


def test_noise_creeping_up_with_recall_green(history_at: str) -> None:
    g = golden_set(20)
    runs = []
    for step in range(7):
        # The worst expected chunk climbs inside the top-10: more results score below it (the
        # rule counts those as noise), while recall stays 1.
        moved = {f"q{i:02d}": {f"q{i:02d}_b": 6 - (1 if i < step * 3 else 0)} for i in range(20)}
        runs.append(gate_run(g, moved, policy=Policy(noise_ceiling=1.0)))
    _record(history_at, runs)
    with History(history_at) as h:
        t = trend(h)
    assert t.series["mean_recall"].direction == "flat"
    assert t.series["mean_noise"].direction == "up"
    assert [p.name for p in t.patterns] == ["noise_creeping_up"]
    assert "structural noise" in t.patterns[0].message


def test_only_runs_like_the_latest_are_trended(history_at: str) -> None:
    g = golden_set(40)
    other_policy = Policy(noise_ceiling=0.9)
    old = [gate_run(g, policy=other_policy) for _ in range(3)]
    _record(history_at, old + [_losing(g, n) for n in range(6)])
    with History(history_at) as h:
        t = trend(h, last=4)
        assert len(t.runs) == 4 and t.excluded == 3
        assert [r.run_id for r in t.runs] == [r.run_id for r in reversed(h.runs(limit=4))]
        with pytest.raises(UsageError, match="no runs of dataset 'nope'"):
            trend(h, dataset="nope")
