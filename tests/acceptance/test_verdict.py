"""Every verdict rule, with the queries it names."""

from __future__ import annotations

from recallwatch.acceptance.gate import run_gate
from recallwatch.formats.policy import Policy
from tests.acceptance.helpers import golden, ranked

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
    strict = Policy(noise_unlisted="irrelevant")  # every result not expected is irrelevant
    res = run_gate(g, results=results, policy=strict)
    q = res.query("q04")
    assert q.quality == 100 and q.failed_rules == ("noise",)
    assert rules(res) == {"unwaived_failure": ("q04",)}
    assert ("q04 (noise: 8 of the top 10 score below its worst expected chunk, 3 allowed; "
            "recall is 1.000)") in res.reasons[0].message
    assert [p.name for p in res.patterns] == ["noise_high"]
    assert "allows at most a set share of a query's top K" in res.patterns[0].message
    # A per-domain ceiling calibrated for legal lets it pass.
    calibrated = run_gate(g, results=results, policy=Policy(
        noise_ceiling_per_domain={"legal": 0.8}, noise_unlisted="irrelevant"))
    assert calibrated.verdict == "ACCEPT"


def test_sparse_labels_do_not_stop_an_ideal_ranking_and_say_why() -> None:
    # one expected chunk per query, at rank 1 or 2: the other 8-9 results are nobody's judgment
    g, results = dataset(8, {f"q{i:02d}": {"e": 1 + i % 2} for i in range(8)})
    res = run_gate(g, results=results)
    assert res.verdict == "ACCEPT" and not res.failing()
    assert all(q.noise in (8, 9) and not q.noise_measured for q in res.queries)
    assert res.aggregate.noise_unmeasured == 8
    (check,) = [c for c in res.checks if c.rule == "noise"]
    assert check.status == "not applied"
    assert check.message.startswith(
        "noise rule not measured on 8 of 8 queries (q00, q01, q02, q03, q04, q05, q06, q07): "
        "they list 1 expected chunk with K = 10, so even when the index ranks them first the "
        "other 9 results of the top 10 score below them")
    assert "recallwatch label pool" in check.message and "--judgments" in check.message
    assert check.message not in res.warnings  # said once, as the check


def test_judged_results_make_the_noise_rule_measure() -> None:
    g, results = dataset(2, {"q00": {"e": 1}, "q01": {"e": 1}})
    ids = results["q00"].ids
    # q00: every other result judged not relevant -> noise 9, measured, fails;
    # q01: six results beyond the top 10 judged relevant -> 7 relevant chunks known, enough for
    # the rule: the 9 unjudged results of its top 10 below its expected chunk are noise
    judged = {("q00", c): 0 for c in ids if c != "e"}
    judged |= {("q01", c): 1 for c in ids[12:18]}
    res = run_gate(g, results=results, judgments=judged)
    q0, q1 = res.query("q00"), res.query("q01")
    assert (q0.noise, q0.noise_unjudged, q0.noise_measured, q0.failed_rules) == (
        9, 0, True, ("noise",))
    assert (q1.noise, q1.noise_unjudged, q1.labels_sparse, q1.noise_measured) == (
        9, 9, False, True)
    assert q1.failed_rules == ("noise",)
    # a result judged relevant is not noise
    judged |= {("q00", c): 2 for c in ids[1:4]}
    assert run_gate(g, results=results, judgments=judged).query("q00").noise == 6
    (diag,) = q0.diagnosis
    assert diag.cause == "noise" and diag.summary.startswith(
        "9 of the top 10 results score below e (score ")
    assert "the noise ceiling 0.30 allows 3 (recall is 1.000, a separate rule)" in diag.summary
    assert "9 of these were judged not relevant" in diag.summary


def test_a_gold_query_failing_on_noise_says_its_gold_chunk_was_found() -> None:
    g, results = dataset(20, {"q04": {"e": 2}}, gold={"q04"})
    res = run_gate(g, results=results, policy=Policy(noise_unlisted="irrelevant"))
    (reason,) = [r for r in res.reasons if r.rule == "gold_failure"]
    assert "its Gold chunk found: the failure is noise, not recall" in reason.message
    assert "Gold chunk e found at rank 2" in reason.message
    assert "must never be missed" not in reason.message


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


def test_a_long_list_of_failing_queries_says_how_many_it_does_not_name() -> None:
    failing = {f"q{i:02d}": {"e": 40} for i in range(26)}
    g, results = dataset(40, failing, gold={"q00", "q01", "q02", "q03", "q04", "q05", "q06",
                                            "q07", "q08", "q09"})
    res = run_gate(g, results=results)
    reasons = {r.rule: r for r in res.reasons}
    unwaived = reasons["unwaived_failure"]
    assert len(unwaived.queries) == 16  # every one in `queries`; 8 named in the message
    named = [f"q{i:02d} ({res.query(f'q{i:02d}').failure_words()})" for i in range(10, 18)]
    assert unwaived.message.endswith(": " + "; ".join(named) + " and 8 more")
    gold = reasons["gold_failure"]
    assert len(gold.queries) == 10 and gold.message.endswith(" and 2 more")
    g, results = dataset(40, {"q05": {"e": 30}})
    alone = run_gate(g, results=results)
    (one,) = alone.reasons
    assert one.message.endswith(f": q05 ({alone.query('q05').failure_words()})")
