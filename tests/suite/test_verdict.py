"""Every verdict rule, with the queries it names."""

from __future__ import annotations

from recallwatch.formats.policy import Policy
from recallwatch.suite.gate import run_gate
from tests.suite.helpers import golden, ranked

# A passing query: its expected chunk at rank 7 (noise 3 = allowed), recall 1.
PASS = {"e": 7}


def dataset(n: int, failing: dict[str, dict[str, int]], gold: set[str] = frozenset()) -> tuple:
    queries, results = [], {}
    for i in range(n):
        qid = f"q{i:02d}"
        q = {"id": qid, "text": f"pregunta {i}", "expected": ["e"], "domain": "legal"}
        if qid in gold:
            q["gold"] = ["e"]
        queries.append(q)
        results[qid] = ranked(failing.get(qid, PASS))
    return golden(*queries), results


def rules(res: object) -> dict[str, tuple[str, ...]]:
    return {r.rule: r.queries for r in res.reasons}  # type: ignore[attr-defined]


def test_all_pass_accepts() -> None:
    g, results = dataset(20, {})
    res = run_gate(g, results=results)
    assert res.verdict == "ACCEPT" and res.reasons == () and res.exit_code == 0
    assert res.aggregate.mean_quality == 100.0 and res.aggregate.failed_queries == 0


def test_gold_failure_stops_even_when_mean_quality_is_high() -> None:
    # 1 of 40 queries misses its Gold chunk: mean quality 97.5 >= 95, but Gold is not negotiable.
    g, results = dataset(40, {"q03": {"e": 12}}, gold={"q03"})
    res = run_gate(g, results=results)
    assert res.aggregate.mean_quality == 97.5
    assert res.verdict == "STOP" and res.exit_code == 1
    assert rules(res) == {"gold_failure": ("q03",)}


def test_non_gold_failure_needs_a_waiver() -> None:
    g, results = dataset(40, {"q05": {"e": 30}})
    stop = run_gate(g, results=results)
    assert rules(stop) == {"unwaived_failure": ("q05",)}
    waived = run_gate(g, results=results, policy=Policy(waivers={"q05": "tabla sin cabecera"}))
    assert waived.verdict == "ACCEPT"
    assert waived.query("q05").waiver == "tabla sin cabecera"


def test_failure_rate_over_five_percent_stops_even_with_waivers() -> None:
    failing = {f"q{i:02d}": {"e": 40} for i in range(3)}  # 3 of 40 = 7.5 % > 5 %
    g, results = dataset(40, failing)
    res = run_gate(g, results=results, policy=Policy(
        waivers=dict.fromkeys(failing, "diagnosed"), min_mean_quality=0))
    assert rules(res) == {"failure_rate": ("q00", "q01", "q02")}
    two = {k: failing[k] for k in ("q00", "q01")}  # 2 of 40 = 5 %: tolerated
    g2, results2 = dataset(40, two)
    ok = run_gate(g2, results=results2, policy=Policy(
        waivers=dict.fromkeys(two, "diagnosed"), min_mean_quality=0))
    assert ok.verdict == "ACCEPT"


def test_mean_quality_rule_names_the_queries_below_100() -> None:
    g, results = dataset(10, {"q01": {"e": 11}, "q02": {"e": 12}})
    res = run_gate(g, results=results, policy=Policy(
        waivers={"q01": "x", "q02": "y"}, other_failures_allowed=0.5))
    assert res.aggregate.mean_quality == 80.0
    assert rules(res) == {"mean_quality": ("q01", "q02")}
    assert "mean quality 80.0 is below 95" in res.reasons[0].message


def test_noise_failure_counts_as_a_failing_query() -> None:
    g, results = dataset(20, {"q04": {"e": 2}})  # recall 1, noise 8; 1 of 20 = 5 %
    res = run_gate(g, results=results)
    q = res.query("q04")
    assert q.quality == 100 and q.failed_rules == ("noise",)
    assert rules(res) == {"unwaived_failure": ("q04",)}
    assert [p.name for p in res.patterns] == ["noise_high"]
    # A per-domain ceiling calibrated for legal lets it pass.
    calibrated = run_gate(g, results=results,
                          policy=Policy(noise_ceiling_per_domain={"legal": 0.8}))
    assert calibrated.verdict == "ACCEPT"


def test_group_quality_rule() -> None:
    queries = [{"id": "a1", "text": "x", "expected": ["e"], "domain": "a"},
               {"id": "b1", "text": "y", "expected": ["e"], "domain": "b"},
               {"id": "b2", "text": "z", "expected": ["e"], "domain": "b"}]
    results = {"a1": ranked(PASS), "b1": ranked(PASS), "b2": ranked({"e": 20})}
    res = run_gate(golden(*queries), results=results,
                   policy=Policy(min_group_quality=60, min_mean_quality=0,
                                 other_failures_allowed=1, waivers={"b2": "known"}))
    assert rules(res) == {"group_quality": ("b1", "b2")}


def test_json_contract_keys() -> None:
    g, results = dataset(3, {"q01": {"e": 15}})
    d = run_gate(g, results=results).to_dict()
    assert {"verdict", "reasons", "aggregate", "queries", "run_id", "dataset_hash", "policy_hash",
            "config_hash"} <= set(d)
    assert {"mean_quality", "mean_recall", "mean_precision", "mrr", "mean_ndcg",
            "failed_queries"} <= set(d["aggregate"])
    q = d["queries"][1]
    assert {"id", "recall", "quality", "noise", "noise_ceiling", "precision", "rr", "ndcg",
            "passed", "failed_rules", "expected"} <= set(q)
    assert q["expected"] == [{"id": "e", "rank": 15, "score": q["expected"][0]["score"],
                              "gold": False, "in_top_k": False}]
    assert {"rule", "message", "queries"} == set(d["reasons"][0])
