"""Each comparison case: regressions, recoveries, rank changes, significance, comparability,
baselines (a STOP run is never one)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from recallwatch.acceptance.model import RunConfig
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy, SearchSettings
from recallwatch.history import compare_runs, config_differences, record_gate_run
from recallwatch.stats import paired_test
from tests.history.helpers import LENIENT, gate_run, golden_set


def test_newly_failing_newly_passing_and_rank_changes() -> None:
    g = golden_set(10)
    base = gate_run(g, {"q01": {"q01_b": 14}, "q02": {"q02_b": 4}})
    cur = gate_run(g, {"q03": {"q03_b": 14}, "q04": {"q04_a": 12, "q04_b": 1}})
    c = compare_runs(base, cur)
    assert c["comparable"] and c["why"] == ""
    assert c["newly_failing"] == ["q03", "q04"]
    assert c["newly_passing"] == ["q01"]
    assert c["rank_changes"] == {
        "q01": {"q01_b": [14, 2]},
        "q02": {"q02_b": [4, 2]},
        "q03": {"q03_b": [2, 14]},
        "q04": {"q04_a": [1, 12], "q04_b": [2, 1]},
    }
    assert c["summary"].startswith("mean quality 90.0 → 80.0 (−10.0, p=")
    assert c["summary"].endswith("2 newly failing, 1 newly passing")
    # Without a store, the report says which chunks entered the top-K instead.
    assert c["entered_top_k"]["q03"] == ["q03_other_002"]
    assert c["buried_by"] == {}
    assert any(line.startswith(f"q03 passed at run {base.run_id} and fails now on recall")
               and "q03_b 2 → 14" in line for line in c["details"])
    assert any(line.startswith("q01 failed at run") for line in c["details"])


def test_deltas_are_paired_over_shared_queries_with_holm() -> None:
    g = golden_set(30)
    base = gate_run(g)
    worse = {f"q{i:02d}": {f"q{i:02d}_b": 15} for i in range(0, 30, 2)}  # half of them
    cur = gate_run(g, worse)
    d = compare_runs(base, cur)["deltas"]
    a = [q.quality for q in base.queries]
    b = [q.quality for q in cur.queries]
    assert d["quality"]["old"] == pytest.approx(100.0)
    assert d["quality"]["new"] == pytest.approx(50.0)
    assert d["quality"]["delta"] == pytest.approx(-50.0)
    assert d["quality"]["p_value"] == paired_test(a, b, test="randomization", seed=0,
                                                  n_resamples=10_000).p_value
    assert d["quality"]["p_value"] < 0.001 and d["quality"]["significant"]
    assert d["rr"]["delta"] == 0.0 and d["rr"]["p_value"] == 1.0 and not d["rr"]["significant"]
    assert all(d[m]["p_holm"] >= d[m]["p_value"] for m in ("quality", "recall", "rr", "ndcg"))
    assert d["noise"]["n"] == 30 and "p_value" not in d["noise"]


def test_one_query_regressing_is_named_but_not_significant() -> None:
    g = golden_set(30)
    c = compare_runs(gate_run(g), gate_run(g, {"q07": {"q07_a": 40}}))
    assert c["newly_failing"] == ["q07"]
    assert c["rank_changes"]["q07"] == {"q07_a": [1, None]}
    assert not c["deltas"]["quality"]["significant"]
    assert "q07_a 1 → >depth" in c["details"][0]


def test_a_changed_golden_set_is_not_comparable_and_changed_queries_are_left_out() -> None:
    g1 = golden_set(4)
    data = g1.to_dict()
    data["version"] = "2"
    data["queries"][1]["expected"] = ["q01_a", "q01_c"]
    data["queries"].append({"id": "q99", "text": "new", "expected": ["q99_a"]})
    g2 = GoldenSet.from_dict(data)
    c = compare_runs(gate_run(g1), gate_run(g2))
    assert not c["comparable"]
    assert c["why"].startswith(f"dataset hash differs (kb v1 #{g1.hash[:8]} → kb v2 #")
    assert c["n_shared"] == 3
    assert c["queries_changed"] == ["q01"] and c["queries_added"] == ["q99"]
    assert c["summary"].startswith("not comparable (dataset hash differs")


def test_a_policy_change_names_the_rule() -> None:
    g = golden_set(3)
    c = compare_runs(gate_run(g), gate_run(g, policy=replace(LENIENT, min_mean_quality=90.0)))
    assert not c["comparable"]
    assert c["why"] == "policy hash differs: min_mean_quality (95.0 → 90.0)"


def test_config_differences_name_the_embedder_and_the_boost() -> None:
    a = {"source": "store", "embedder": {"name": "use", "version": "3", "dimension": 512,
                                         "probe_hash": "aaaa1111"},
         "search": SearchSettings().to_dict()}
    b = {"source": "store", "embedder": {"name": "e5", "version": "1", "dimension": 384,
                                         "probe_hash": "bbbb2222"},
         "search": SearchSettings(boost={"label": {"SINTESIS_CURADA": 0.05}}).to_dict()}
    assert config_differences(a, b) == [
        "embedder fingerprint (use@3 #aaaa1111 → e5@1 #bbbb2222)",
        "search.boost.label.SINTESIS_CURADA (— → 0.05)",
    ]
    g = golden_set(2)
    r1, r2 = gate_run(g), gate_run(g)
    c = compare_runs(replace(r1, config=RunConfig.from_dict(a), config_hash="x"),
                     replace(r2, config=RunConfig.from_dict(b), config_hash="y"))
    assert not c["comparable"]
    assert c["why"] == ("config hash differs: embedder fingerprint (use@3 #aaaa1111 → e5@1 "
                        "#bbbb2222), search.boost.label.SINTESIS_CURADA (— → 0.05)")


def test_baselines_previous_and_last_accepted_and_stop_is_never_a_baseline(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    g = golden_set(10)
    first = record_gate_run(gate_run(g), db)
    assert first.comparison == {"previous": None, "last_accepted": None}
    stop1 = record_gate_run(gate_run(g, {"q01": {"q01_b": 14}}), db)
    assert stop1.verdict == "STOP"
    assert stop1.comparison is not None
    assert stop1.comparison["previous"]["run_id"] == first.run_id
    assert stop1.comparison["last_accepted"]["run_id"] == first.run_id
    stop2 = record_gate_run(gate_run(g, {"q01": {"q01_b": 14}, "q02": {"q02_b": 14}}), db)
    assert stop2.comparison is not None
    prev, acc = stop2.comparison["previous"], stop2.comparison["last_accepted"]
    assert prev["run_id"] == stop1.run_id and prev["newly_failing"] == ["q02"]
    assert prev["still_failing"] == ["q01"]
    assert acc["run_id"] == first.run_id and acc["newly_failing"] == ["q01", "q02"]
    # Another policy: the previous run is still shown (not comparable), no accepted baseline.
    other = record_gate_run(gate_run(g, policy=Policy(noise_ceiling=0.9)), db)
    assert other.comparison is not None
    assert other.comparison["previous"]["run_id"] == stop2.run_id
    assert not other.comparison["previous"]["comparable"]
    assert other.comparison["last_accepted"] is None


def test_another_dataset_name_is_another_history(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    record_gate_run(gate_run(golden_set(3, name="faq")), db)
    r = record_gate_run(gate_run(golden_set(3, name="legal")), db)
    assert r.comparison == {"previous": None, "last_accepted": None}
