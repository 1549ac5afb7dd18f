"""The policy's run-level limits on the example knowledge base's golden set: rank-measure targets,
max_drop against the last accepted run (paired test, Holm), latency and cost caps.

Ranked lists are written as results files (the regressions are exact and cheap); the same rules on
real stores are in tests/stores/test_limits_stores.py.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.acceptance.gate import Gate, run_gate
from recallwatch.acceptance.limits import against_baseline, measure_values, run_checks
from recallwatch.acceptance.model import GateResult
from recallwatch.cli import app
from recallwatch.errors import InputError
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.formats.policy import Policy, load_policy
from recallwatch.formats.results import RankedList
from recallwatch.history import History, record_gate_run
from recallwatch.report.junit import to_junit
from recallwatch.report.markdown import to_markdown
from tests.reference import reference_library

from .helpers import ranked

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
LIMITS = """\
top_k: 10
noise_ceiling: 0.9
targets:
  nDCG@10: {target}
  per_domain:
    legal: {{RR: 0.5}}
max_drop:
  nDCG@10: 0.02
  RR: 0.02
"""


def _policy(tmp_path: Path, text: str, name: str = "policy.yaml") -> Policy:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_policy(path)


def _results(golden: GoldenSet, lower: set[str] | None = None) -> dict[str, RankedList]:
    """Every expected chunk in the top 10 (recall 1 everywhere). Healthy: at ranks 1..e. For the
    queries in ``lower``: at ranks 10-e+1..10, so recall, quality and noise are unchanged and
    only the ranking gets worse."""
    out = {}
    for q in golden.queries:
        e = len(q.expected)
        start = 10 - e + 1 if lower is not None and q.id in lower else 1
        out[q.id] = ranked({c: start + i for i, c in enumerate(q.expected)}, n=20)
    return out


def _pushed_down(golden: GoldenSet, ids: set[str]) -> dict[str, RankedList]:
    """In a few queries, one other chunk ranks first and the expected ones follow it: a small
    drop of nDCG and RR, recall unchanged."""
    out = _results(golden)
    for q in golden.queries:
        if q.id in ids:
            out[q.id] = ranked({c: 2 + i for i, c in enumerate(q.expected)}, n=20)
    return out


FIVE = {"irpf_autonomos_2025", "cuota_autonomos_2000", "tipos_retencion",
        "retencion_nuevo_profesional", "salario_grupo_2"}


@pytest.fixture(scope="module")
def kb() -> GoldenSet:
    return load_golden(KB / "golden.yaml")


def test_a_regression_that_only_lowers_ndcg_is_blocked(tmp_path: Path, kb: GoldenSet) -> None:
    policy = _policy(tmp_path, LIMITS.format(target=0.8))
    history = tmp_path / "history.db"
    healthy = record_gate_run(run_gate(kb, results=_results(kb), policy=policy), history)
    assert healthy.verdict == "ACCEPT"
    everyone = {q.id for q in kb.queries}
    lowered = run_gate(kb, results=_results(kb, everyone), policy=policy)
    # What the gate judged before these limits: recall, quality, noise, failures all unchanged.
    assert lowered.aggregate.mean_recall == healthy.aggregate.mean_recall == 1.0
    assert lowered.aggregate.mean_quality == healthy.aggregate.mean_quality
    assert not lowered.failing()
    assert lowered.aggregate.mean_ndcg < healthy.aggregate.mean_ndcg
    without_limits = run_gate(kb, results=_results(kb, everyone),
                              policy=replace(policy, limits=Policy().limits))
    assert without_limits.verdict == "ACCEPT"  # the old verdict lets it through

    judged = record_gate_run(lowered, history)
    assert judged.verdict == "STOP" and judged.exit_code == 1
    rules = {r.rule for r in judged.reasons}
    assert rules == {"target", "max_drop"}
    drop = next(c for c in judged.checks if c.rule == "max_drop" and c.subject == "nDCG@10")
    assert drop.status == "stop"
    assert drop.figures["baseline_run"] == healthy.run_id
    assert drop.figures["drop"] == pytest.approx(healthy.aggregate.mean_ndcg
                                                 - lowered.aggregate.mean_ndcg)
    assert drop.figures["p_holm"] <= 0.05
    # The history holds the verdict the gate answered.
    with History(history) as h:
        assert h.load(judged.run_id).verdict == "STOP"


def test_a_drop_within_noise_does_not_block_and_says_why(tmp_path: Path, kb: GoldenSet) -> None:
    policy = _policy(tmp_path, LIMITS.format(target=0.5))
    history = tmp_path / "history.db"
    base = record_gate_run(run_gate(kb, results=_results(kb), policy=policy), history)
    small = record_gate_run(run_gate(kb, results=_pushed_down(kb, FIVE), policy=policy),
                            history)
    check = next(c for c in small.checks if c.subject == "nDCG@10" and c.rule == "max_drop")
    # The mean fell more than max_drop allows, but five queries out of 78 are not evidence: five
    # same-signed differences have an exact two-sided p of 2/2^5 = 0.0625 before correction.
    assert check.figures["drop"] == pytest.approx(base.aggregate.mean_ndcg
                                                  - small.aggregate.mean_ndcg)
    assert check.figures["drop"] > 0.02
    assert check.status == "within noise"
    assert "within noise" in check.message and "Holm-adjusted" in check.message
    assert check.figures["p_value"] == pytest.approx(2 / 2**5)
    assert check.figures["p_holm"] > 0.05
    assert small.verdict == "ACCEPT"
    assert "within noise" in to_markdown(small)




def test_measures_from_ranks_agree_with_the_gates_own(kb: GoldenSet) -> None:
    """The limits compute measures from the recorded ranks of the expected chunks; the gate
    computes nDCG@K, RR and P@K from the full ranked lists: two paths, the same values."""
    result = run_gate(kb, results=_results(kb, {q.id for q in kb.queries[::2]}))
    values = measure_values(result.queries, ["nDCG@10", "RR", "P@10"])
    for i, q in enumerate(result.queries):
        assert values["nDCG@10"][i] == pytest.approx(q.ndcg)
        assert values["RR"][i] == pytest.approx(q.rr)
        assert values["P@10"][i] == pytest.approx(q.precision)


def test_measures_from_ranks_agree_with_pytrec_eval(kb: GoldenSet) -> None:
    pytrec_eval = reference_library("pytrec_eval")
    results = _results(kb, {q.id for q in kb.queries[::3]})
    result = run_gate(kb, results=results)
    values = measure_values(result.queries, ["AP", "R@5", "nDCG@3"])
    qrels = {q.id: dict.fromkeys(q.expected, 1) for q in kb.queries}
    run = {qid: {cid: float(s) for cid, s in zip(r.ids, r.scores)} for qid, r in results.items()}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recall.5", "ndcg_cut.3"}).evaluate(run)
    for i, q in enumerate(result.queries):
        assert values["AP"][i] == pytest.approx(ref[q.id]["map"])
        assert values["R@5"][i] == pytest.approx(ref[q.id]["recall_5"])
        assert values["nDCG@3"][i] == pytest.approx(ref[q.id]["ndcg_cut_3"])


def test_standard_set_measures_from_ranks_agree_with_pytrec_eval(kb: GoldenSet) -> None:
    # the gate's extra metrics include trec_eval's standard set where a golden set determines it
    pytrec_eval = reference_library("pytrec_eval")
    results = _results(kb, {q.id for q in kb.queries[::3]})
    result = run_gate(kb, results=results)
    names = ["GMAP", "IPrec@0.5", "IPrec@1.0", "SetR", "NumRelRet", "RBP(p=0.9)"]
    values = measure_values(result.queries, names)
    qrels = {q.id: dict.fromkeys(q.expected, 1) for q in kb.queries}
    run = {qid: {cid: float(s) for cid, s in zip(r.ids, r.scores)} for qid, r in results.items()}
    ref = pytrec_eval.RelevanceEvaluator(
        qrels, {"gm_map", "iprec_at_recall", "set_recall", "num_rel_ret"}).evaluate(run)
    for i, q in enumerate(result.queries):
        assert math.log(max(values["GMAP"][i], 1e-5)) == pytest.approx(ref[q.id]["gm_map"])
        assert values["IPrec@0.5"][i] == pytest.approx(ref[q.id]["iprec_at_recall_0.50"])
        assert values["IPrec@1.0"][i] == pytest.approx(ref[q.id]["iprec_at_recall_1.00"])
        assert values["SetR"][i] == pytest.approx(ref[q.id]["set_recall"])
        assert values["NumRelRet"][i] == ref[q.id]["num_rel_ret"]
        ranks = [h.rank for h in result.queries[i].expected if h.rank is not None]
        assert values["RBP(p=0.9)"][i] == pytest.approx(0.1 * sum(0.9 ** (r - 1) for r in ranks))


def test_a_gmap_target_is_judged_on_the_geometric_mean(tmp_path: Path, kb: GoldenSet) -> None:
    results = _results(kb, {q.id for q in kb.queries[::2]})
    values = measure_values(run_gate(kb, results=results).queries, ["GMAP"])["GMAP"]
    geometric = math.exp(sum(math.log(max(v, 1e-5)) for v in values) / len(values))
    assert geometric < values.mean() - 0.01  # the two figures differ here
    between = (geometric + values.mean()) / 2
    policy = _policy(tmp_path, f"top_k: 10\nnoise_ceiling: 0.9\ntargets:\n  GMAP: {between}\n")
    result = run_gate(kb, results=results, policy=policy)
    (reason,) = [r for r in result.reasons if r.rule == "target"]
    assert f"GMAP {geometric:.3f} is below the target {between:g}" in reason.message


@pytest.mark.parametrize("name", ["Bpref", "Judged@10", "SetP", "NumRet", "infAP", "alpha_nDCG@10"])
def test_a_target_on_a_measure_a_golden_set_cannot_compute_is_refused(
        tmp_path: Path, kb: GoldenSet, name: str) -> None:
    policy = _policy(tmp_path, f"targets:\n  {name}: 0.5\n")
    with pytest.raises(InputError) as err:
        Gate(kb, policy)
    text = str(err.value)
    assert text.startswith(f"{tmp_path / 'policy.yaml'}:2") and f"targets.{name}" in text
    assert "computed from the ranks of the expected chunks" in text
    assert "recallwatch eval" in text
    if name.startswith("alpha"):
        assert "needs subtopic judgments" in text and "--subtopics FILE" in text


def test_targets_per_domain(tmp_path: Path, kb: GoldenSet) -> None:
    legal = {q.id for q in kb.queries if q.domain == "legal"}
    policy = _policy(tmp_path, LIMITS.format(target=0.1))
    result = run_gate(kb, results=_results(kb, legal), policy=policy)
    assert result.verdict == "STOP"
    (reason,) = result.reasons
    assert reason.rule == "target" and "RR in legal" in reason.message
    assert set(reason.queries) <= legal and reason.queries


def test_unknown_measure_is_a_located_error(tmp_path: Path, kb: GoldenSet) -> None:
    policy = _policy(tmp_path, "targets:\n  nDGC@10: 0.8\n")
    with pytest.raises(InputError) as err:
        Gate(kb, policy)
    text = str(err.value)
    assert text.startswith(f"{tmp_path / 'policy.yaml'}:2") and "nDGC@10" in text
    assert "\n" not in text


def test_cli_bad_limit_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("max_drop:\n  RR: 2\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["gate", str(KB / "golden.yaml"), "--results",
                                   str(tmp_path / "none.jsonl"), "--policy",
                                   str(tmp_path / "p.yaml"), "--no-history"])
    assert res.exit_code == 2
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "max_drop.RR" in lines[0] and "[0, 1]" in lines[0]


def test_policy_without_limits_keeps_its_rules() -> None:
    assert not {"targets", "max_drop", "max_latency_p99_ms",
                "max_cost_increase"} & set(Policy().rules_dict())


def _with_cost(result: GateResult, **cost: Any) -> GateResult:
    base = {"queries": 400, "search_p50_ms": 2.0, "search_p99_ms": 4.0, "search_mean_ms": 2.5,
            "search_max_ms": 5.0, "embed_ms_per_query": 1.0, "index_bytes": 1000}
    return replace(result, cost={**base, **cost})


def test_cost_increase_blocks_with_injected_measurements(tmp_path: Path, kb: GoldenSet) -> None:
    policy = _policy(tmp_path, "max_cost_increase: 0.5\nnoise_ceiling: 0.9\n")
    base = _with_cost(run_gate(kb, results=_results(kb), policy=policy))
    same = against_baseline(_with_cost(run_gate(kb, results=_results(kb), policy=policy),
                                       search_p99_ms=9.0), base)
    # figures without their per-call timings: a timing cannot be told from noise, so it is not
    # judged (tests/acceptance/test_cost_noise.py judges timings); index bytes compare exactly
    assert same.verdict == "ACCEPT"
    assert {c.subject: c.status for c in same.checks if c.rule == "cost_increase"} == {
        "search latency p99 (ms)": "not applied", "query embedding alone p50 (ms)": "not applied",
        "index bytes": "pass"}
    bigger = against_baseline(_with_cost(run_gate(kb, results=_results(kb), policy=policy),
                                         index_bytes=1600), base)
    assert bigger.verdict == "STOP"
    (reason,) = bigger.reasons
    assert reason.rule == "cost_increase" and "index bytes" in reason.message
    assert "+60%" in reason.message
    assert 'classname="recallwatch.policy.cost_increase"' in to_junit(bigger)
    assert "cost\\_increase" in to_markdown(bigger)


def _timed(ms: Any, queries: int = 40) -> dict[str, Any]:
    """A run's cost with injected per-call timings (milliseconds), as the gate records it."""
    return {"queries": queries, "calls": len(ms), "samples": {"search_ms": [float(x) for x in ms],
                                                                "embed_ms": []}}


def test_latency_cap_stops_only_when_the_p99s_whole_interval_is_above_it(
        tmp_path: Path, kb: GoldenSet) -> None:
    """The gate's cap follows the monitor's rule (recallwatch.acceptance.latency_cap): a p99 over
    the cap whose interval reaches below it is within noise, and passes, saying so."""
    policy = _policy(tmp_path, "max_latency_p99_ms: 50\n")
    result = run_gate(kb, results=_results(kb), policy=policy)
    rng = np.random.default_rng(7)
    slow = rng.lognormal(np.log(80.0), 0.1, 400)  # every call near 80 ms
    reasons, checks = run_checks(result.queries, policy, _timed(slow))
    assert [r.rule for r in reasons] == ["latency_p99"] and checks[0].status == "stop"
    assert reasons[0].message.startswith(f"search latency p99 is {np.percentile(slow, 99):.2f} "
                                         "ms, over the maximum 50 ms (95 % interval ")
    assert reasons[0].message.endswith(
        "ms over 400 calls: the 40 golden queries, one search call each, taken again in rounds: "
        "the whole interval is above the maximum) (max_latency_p99_ms 50)")
    # Six slow calls in 400 put the point p99 over the cap, not its interval: no stop.
    noisy = np.concatenate([rng.uniform(5.0, 45.0, 394), [51.0, 52.0, 53.0, 54.0, 55.0, 400.0]])
    assert np.percentile(noisy, 99) > 50.0
    reasons, checks = run_checks(result.queries, policy, _timed(noisy))
    assert not reasons and checks[0].status == "pass"
    assert "reaches below it: within noise, not a stop (max_latency_p99_ms 50)" in checks[0].message
    fast = rng.uniform(5.0, 20.0, 400)
    reasons, checks = run_checks(result.queries, policy, _timed(fast))
    assert not reasons and checks[0].status == "pass"
    assert checks[0].message.endswith("over 400 calls is within the cap 50 ms")
    # A results file carries no timings: the cap cannot apply, and says so.
    assert result.cost is None
    assert [c.status for c in result.checks if c.rule == "latency_p99"] == ["not applied"]


def test_latency_cap_with_too_few_calls_for_a_p99(tmp_path: Path, kb: GoldenSet) -> None:
    """No p99 is stated from 13 calls; the cap still stops a run whose p99's low end is above it,
    and says it cannot judge one whose low end is under it."""
    policy = _policy(tmp_path, "max_latency_p99_ms: 50\n")
    result = run_gate(kb, results=_results(kb), policy=policy)
    few = np.concatenate([np.linspace(18.0, 28.0, 11), [30.0, 30.0]])
    reasons, checks = run_checks(result.queries, policy, _timed(few, queries=13))
    assert not reasons and checks[0].status == "not applied"
    assert checks[0].message == (
        "search latency p99 30.00 ms: the low end of its 95 % interval, 30.00 ms, is not above "
        "the maximum 50 ms, and whether the p99 is under it cannot be said (13 calls: the 13 "
        "golden queries, one search call each, as many as the run timed: not enough calls for a "
        "p99: 13 of 368 needed for the interval's high end): not judged, not a stop "
        "(max_latency_p99_ms 50): time more calls (leave --latency-sample out, or give at least "
        "368)")
    reasons, checks = run_checks(result.queries, policy, _timed(few + 50.0, queries=13))
    assert [r.rule for r in reasons] == ["latency_p99"] and checks[0].status == "stop"
    assert reasons[0].message == (
        "search latency p99 is 80.00 ms, over the maximum 50 ms (the low end of its 95 % "
        "interval, 80.00 ms, is above the maximum; 13 calls: the 13 golden queries, one search "
        "call each, as many as the run timed: not enough calls for a p99: 13 of 368 needed for "
        "the interval's high end) (max_latency_p99_ms 50)")


def test_cli_gate_blocks_the_ranking_regression(tmp_path: Path, kb: GoldenSet) -> None:
    def write(name: str, results: dict[str, RankedList]) -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps({"query_id": q, "results": [
            {"id": c, "score": float(s)} for c, s in zip(r.ids, r.scores)]}) + "\n"
            for q, r in results.items()), encoding="utf-8")
        return path

    (tmp_path / "p.yaml").write_text("noise_ceiling: 0.9\nmax_drop:\n  nDCG@10: 0.02\n",
                                     encoding="utf-8")
    args = ["gate", str(KB / "golden.yaml"), "--policy", str(tmp_path / "p.yaml"),
            "--history", str(tmp_path / "h.db")]
    runner = CliRunner()
    ok = runner.invoke(app, [*args, "--results", str(write("a.jsonl", _results(kb)))])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, [*args, "--results", str(write(
        "b.jsonl", _results(kb, {q.id for q in kb.queries}))), "--format", "json",
        "--junit", str(tmp_path / "j.xml")])
    assert bad.exit_code == 1
    body = json.loads(bad.output)
    assert [r["rule"] for r in body["reasons"]] == ["max_drop"]
    assert any(c["rule"] == "max_drop" and c["status"] == "stop" for c in body["checks"])
    assert 'classname="recallwatch.policy.max_drop"' in (tmp_path / "j.xml").read_text()


@pytest.mark.slow
def test_max_drop_against_a_postgresql_history(tmp_path: Path, kb: GoldenSet,
                                               pg_databases: Any) -> None:
    """The baseline comes from the history, whichever backend holds it."""
    policy = _policy(tmp_path, LIMITS.format(target=0.1))
    history = pg_databases()
    base = record_gate_run(run_gate(kb, results=_results(kb), policy=policy), history)
    lowered = record_gate_run(run_gate(kb, results=_results(kb, {q.id for q in kb.queries}),
                                       policy=policy), history)
    assert base.verdict == "ACCEPT" and lowered.verdict == "STOP"
    assert "max_drop" in {r.rule for r in lowered.reasons}
    with History(history) as h:
        stored = h.load(lowered.run_id)
    assert stored.verdict == "STOP" and [c.status for c in stored.checks
                                         if c.rule == "max_drop"] == ["stop", "stop"]


def test_latency_is_timed_on_every_query_up_to_a_hundred_then_spread_over_the_set() -> None:
    from itertools import pairwise

    from recallwatch.acceptance.retrieve import LATENCY_QUERIES, latency_rows

    assert latency_rows(0) == [] and latency_rows(78) == list(range(78))
    assert latency_rows(LATENCY_QUERIES) == list(range(LATENCY_QUERIES))
    rows = latency_rows(1000)
    assert len(rows) == LATENCY_QUERIES and rows[0] == 0 and rows[-1] == 999
    gaps = {b - a for a, b in pairwise(rows)}
    assert gaps <= {10, 11}  # evenly spread: 999 / 99 = 10.09
