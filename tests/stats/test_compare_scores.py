"""The comparison object: from per-query arrays (compare_scores) and from qrels + runs (compare)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from recallwatch.errors import InputError, UsageError
from recallwatch.metrics import Qrels, Run, evaluate
from recallwatch.stats import bootstrap_ci, compare, compare_scores, holm, paired_test


def _scores(seed: int, n: int) -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(n)]
    a = {"m1": rng.integers(0, 11, n) / 10, "m2": rng.random(n)}
    b = {"m1": np.clip(a["m1"] + rng.integers(-1, 3, n) / 10, 0, 1),
         "m2": np.clip(a["m2"] + rng.normal(0.0, 0.05, n), 0, 1)}
    return ids, a, b


def test_rows_agree_with_the_building_blocks() -> None:
    ids, a, b = _scores(0, 60)
    result = compare_scores(ids, a, b, seed=5, n_resamples=3000, alpha=0.1)
    assert [row.measure for row in result.measures] == ["m1", "m2"]
    raw = []
    for row in result.measures:
        d = b[row.measure] - a[row.measure]
        assert row.mean_a == pytest.approx(a[row.measure].mean())
        assert row.mean_b == pytest.approx(b[row.measure].mean())
        assert row.delta == pytest.approx(d.mean())
        assert row.test == paired_test(a[row.measure], b[row.measure], seed=5, n_resamples=3000)
        assert row.ci == bootstrap_ci(a[row.measure], b[row.measure], level=0.9, seed=5,
                                      n_resamples=3000)
        assert (row.wins, row.ties, row.losses) == (
            int((d > 1e-9).sum()), int((abs(d) <= 1e-9).sum()), int((d < -1e-9).sum()))
        assert row.n_queries == 60
        raw.append(row.p_value)
    assert [row.p_holm for row in result.measures] == holm(raw).tolist()
    assert result.significant() == tuple(r for r in result.measures if r.p_holm <= 0.1)


def test_a_measure_does_not_depend_on_the_others_but_holm_does() -> None:
    ids, a, b = _scores(1, 40)
    both = compare_scores(ids, a, b)["m1"]
    alone = compare_scores(ids, {"m1": a["m1"]}, {"m1": b["m1"]})["m1"]
    assert (both.test, both.ci, both.delta) == (alone.test, alone.ci, alone.delta)
    assert alone.p_holm == alone.p_value <= both.p_holm


def test_tie_tolerance_widens_ties() -> None:
    ids, a, b = _scores(2, 50)
    strict = compare_scores(ids, a, b)["m2"]
    loose = compare_scores(ids, a, b, tie_tolerance=0.05)["m2"]
    assert loose.ties > strict.ties
    assert loose.wins + loose.ties + loose.losses == 50


def test_to_dict_is_strict_json_even_with_an_infinite_statistic() -> None:
    ids = ["q1", "q2", "q3"]
    result = compare_scores(ids, {"m": np.zeros(3)}, {"m": np.full(3, 0.5)}, test="t")
    row = result.to_dict()["measures"]["m"]
    assert row["statistic"] is None and row["p_value"] == 0.0
    json.dumps(result.to_dict(), allow_nan=False)


def test_unknown_measure_lookup_lists_the_compared_ones() -> None:
    ids, a, b = _scores(3, 10)
    with pytest.raises(UsageError, match="measure 'm3' was not compared; compared: m1, m2"):
        compare_scores(ids, a, b)["m3"]


def test_inconsistent_inputs() -> None:
    ids, a, b = _scores(4, 10)
    with pytest.raises(InputError, match="expected the same measures for B as for A"):
        compare_scores(ids, a, {"m1": b["m1"]})
    with pytest.raises(InputError, match=r"field 'A m1': expected one score per query \(9\)"):
        compare_scores(ids[:9], a, b)
    with pytest.raises(UsageError, match="unknown test 'z'"):
        compare_scores(ids, a, b, test="z")  # type: ignore[arg-type]


QRELS = {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}, "q3": {"d4": 1}, "q4": {"d5": 1}}


def test_compare_evaluates_both_runs_on_every_judged_query() -> None:
    run_a = Run.from_dict({"q1": {"d1": 2.0, "x": 1.0}, "q2": {"x": 2.0, "d3": 1.0},
                           "q3": {"d4": 1.0}, "q4": {"y": 1.0, "d5": 0.5}})
    # B misses q3 entirely and answers an unjudged query.
    run_b = Run.from_dict({"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d3": 2.0},
                           "q4": {"d5": 1.0}, "zz": {"d1": 1.0}})
    qrels = Qrels.from_dict(QRELS)
    result = compare(qrels, run_a, run_b, ["nDCG@10", "RR", "nDCG@10"], seed=3)
    assert [row.measure for row in result.measures] == ["nDCG@10", "RR"]  # duplicates merged
    assert result.query_ids == ("q1", "q2", "q3", "q4")
    assert (result.missing_from_a, result.missing_from_b) == ((), ("q3",))
    assert result.not_judged == ("zz",)
    for row in result.measures:
        a = evaluate(qrels, run_a, [row.measure]).per_query
        b = evaluate(qrels, run_b, [row.measure]).per_query
        (va,), (vb,) = a.values(), b.values()
        assert row.mean_a == pytest.approx(va.mean()) and row.mean_b == pytest.approx(vb.mean())
        assert row.test == paired_test(va, vb, seed=3)
    rr = result["RR"]
    # RR per query: A = (1, 0.5, 1, 0.5), B = (1, 1, 0, 1).
    assert (rr.wins, rr.ties, rr.losses) == (2, 1, 1)


def test_compare_rejects_bad_options_before_evaluating() -> None:
    qrels, run = Qrels.from_dict(QRELS), Run.from_dict({"q1": {"d1": 1.0}})
    with pytest.raises(UsageError, match="alpha must be strictly between 0 and 1, got 0"):
        compare(qrels, run, run, ["RR"], alpha=0)
