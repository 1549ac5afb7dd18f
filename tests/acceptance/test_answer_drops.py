"""max_drop on the answer measures: a paired randomization test over the queries both runs
answered, Holm-corrected with the policy's other max_drop measures. The answer step's output is
given per query here (what each answer scored), as the cost tests give measured timings: what is
tested is the comparison with the baseline, not the judging (tests/answers/test_gate_answers.py
runs both, end to end, through the history)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.limits import ALPHA, against_baseline
from recallwatch.acceptance.model import GateResult
from recallwatch.errors import InputError
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.formats.policy import Policy, load_policy
from recallwatch.report.markdown import to_markdown

from .test_limits import KB, _results

JUDGE = {"kind": "offline", "embedder": "use-multilingual@0.2.1", "support_threshold": 0.4,
         "relevance_threshold": 0.3, "correct_threshold": 0.6, "thresholds": "calibrated"}
TRUSTED = ["correctness", "faithfulness", "hallucination", "relevance"]


@pytest.fixture(scope="module")
def kb() -> GoldenSet:
    return load_golden(KB / "golden.yaml")


def policy(tmp_path: Path, max_drop: dict[str, float]) -> Policy:
    path = tmp_path / "policy.yaml"
    lines = "".join(f"  {k}: {v}\n" for k, v in max_drop.items())
    path.write_text(f"noise_ceiling: 0.9\nmax_drop:\n{lines}", encoding="utf-8")
    return load_policy(path)


def answered(result: GateResult, faithfulness: list[float], *, judge: dict[str, Any] = JUDGE,
             trusted: list[str] = TRUSTED) -> GateResult:
    """``result`` as the answer step leaves it, each query's answer scoring the faithfulness
    given (hallucinated below 1)."""
    queries = tuple(replace(q, answer={"faithfulness": f, "relevance": 0.9, "correctness": 1.0,
                                       "hallucinated": f < 1.0})
                    for q, f in zip(result.queries, faithfulness, strict=True))
    return replace(result, queries=queries, answers={
        "faithfulness": float(np.mean(faithfulness)),
        "judge": {"trusted": trusted, "judge": judge, "accepted": bool(trusted)}})


def run(kb: GoldenSet, p: Policy, faithfulness: list[float] | None, **kw: Any) -> GateResult:
    result = run_gate(kb, results=_results(kb), policy=p)
    return result if faithfulness is None else answered(result, faithfulness, **kw)


def check(result: GateResult, subject: str) -> Any:
    return next(c for c in result.checks if c.rule == "max_drop" and c.subject == subject)


def test_a_significant_drop_of_faithfulness_blocks_with_its_evidence(
        tmp_path: Path, kb: GoldenSet) -> None:
    p = policy(tmp_path, {"nDCG@10": 0.02, "faithfulness": 0.05, "hallucination_rate": 0.05})
    n = len(kb.queries)
    base = run(kb, p, [1.0] * n)
    worse = [0.5 if i % 2 == 0 else 1.0 for i in range(n)]  # every other answer invents
    judged = against_baseline(run(kb, p, worse), base)
    assert judged.verdict == "STOP"
    faith, rate = check(judged, "faithfulness"), check(judged, "hallucination_rate")
    assert (faith.status, rate.status, check(judged, "nDCG@10").status) == (
        "stop", "stop", "pass")
    f = faith.figures
    assert (f["baseline"], f["value"], f["n"]) == (1.0, float(np.mean(worse)), n)
    assert f["drop"] == pytest.approx(1.0 - float(np.mean(worse)))
    assert f["p_holm"] <= ALPHA and f["p_holm"] >= f["p_value"]
    low, high = f["interval"]
    assert low <= -f["drop"] <= high < 0
    assert faith.message.startswith(
        f"faithfulness fell {f['drop']:.3f} (1.000 → {f['value']:.3f}) against run "
        f"{base.run_id}, more than max_drop 0.05; significant (p=")
    assert (f"Holm-adjusted p={f['p_holm']:.3g} over 3 measures; paired randomization test "
            f"over {n} queries both runs answered; 95 % interval of the change {low:+.3f} to "
            f"{high:+.3f})") in faith.message
    assert rate.message.startswith(f"hallucination_rate rose {rate.figures['drop']:.3f} (0.000 → ")
    reasons = {r.rule: r for r in judged.reasons}
    assert set(reasons) == {"max_drop"}
    fell = {q.id for q, w in zip(kb.queries, worse, strict=True) if w < 1.0}
    assert {q for r in judged.reasons for q in r.queries} == fell
    assert "faithfulness fell" in to_markdown(judged)


def test_noise_does_not_block(tmp_path: Path, kb: GoldenSet) -> None:
    """Faithfulness drawn twice from one distribution (seeded): its mean moves by chance. With
    max_drop at half that move, the move is larger than allowed but not evidence."""
    n = len(kb.queries)
    rng = np.random.default_rng(20261206)
    before, after = sorted((rng.uniform(0.6, 1.0, n).round(2).tolist() for _ in range(2)),
                           key=np.mean, reverse=True)  # the later draw is the lower one
    moved = float(np.mean(before) - np.mean(after))
    assert moved > 0
    p = policy(tmp_path, {"faithfulness": round(moved / 2, 4)})
    judged = against_baseline(run(kb, p, after), run(kb, p, before))
    c = check(judged, "faithfulness")
    assert c.status == "within noise" and judged.verdict == "ACCEPT" and not judged.reasons
    assert c.figures["drop"] == pytest.approx(moved) and c.figures["p_holm"] > ALPHA
    assert c.figures["interval"][0] < 0 < c.figures["interval"][1]
    assert "within noise" in c.message and "not blocking" in c.message


def test_a_baseline_without_answers_is_stated_not_an_error(tmp_path: Path,
                                                          kb: GoldenSet) -> None:
    p = policy(tmp_path, {"RR": 0.02, "faithfulness": 0.05})
    n = len(kb.queries)
    bare = run(kb, p, None)
    judged = against_baseline(run(kb, p, [0.0] * n), bare)
    c = check(judged, "faithfulness")
    assert judged.verdict == "ACCEPT" and c.status == "not applied"
    assert c.message == (f"faithfulness: the baseline run {bare.run_id} judged no answers: "
                         "there is nothing to compare with (the next accepted run with answers "
                         "becomes the baseline)")
    assert check(judged, "RR").status == "pass"
    # nor this run: not applied either
    c = check(against_baseline(bare, run(kb, p, [1.0] * n)), "faithfulness")
    assert c.status == "not applied" and "no answers were judged in this run" in c.message
    # no baseline run at all: every max_drop entry not applied, as before
    first = against_baseline(run(kb, p, [1.0] * n), None)
    assert {c.subject: c.status for c in first.checks if c.rule == "max_drop"} == {
        "RR": "not applied", "faithfulness": "not applied"}


def test_answers_judged_by_another_judge_do_not_compare(tmp_path: Path, kb: GoldenSet) -> None:
    p = policy(tmp_path, {"faithfulness": 0.05})
    n = len(kb.queries)
    base = run(kb, p, [1.0] * n)
    stricter = {**JUDGE, "support_threshold": 0.6}
    c = check(against_baseline(run(kb, p, [0.0] * n, judge=stricter), base), "faithfulness")
    assert c.status == "not applied" and "judged by another judge" in c.message
    assert "'support_threshold': 0.4" in c.message and "'support_threshold': 0.6" in c.message
    # an LLM judge's request counters are not part of what it is
    llm = {"kind": "llm", "model": "m", "prompt_sha256": "x", "requests": 10, "bad_replies": 0}
    again = against_baseline(run(kb, p, [1.0] * n, judge={**llm, "requests": 12}),
                             run(kb, p, [1.0] * n, judge=llm))
    assert check(again, "faithfulness").status == "pass"


def test_an_untrusted_measure_stops_on_the_answer_judge(tmp_path: Path, kb: GoldenSet) -> None:
    p = policy(tmp_path, {"answer_relevance": 0.05, "faithfulness": 0.05})
    n = len(kb.queries)
    base = run(kb, p, [1.0] * n)
    judged = against_baseline(run(kb, p, [1.0] * n, trusted=["faithfulness"]), base)
    assert judged.verdict == "STOP"
    (reason,) = judged.reasons
    assert reason.rule == "answer_judge" and reason.message == (
        "the answer judge is not trusted with relevance in this run, so max_drop "
        f"answer_relevance cannot be checked against run {base.run_id}")
    assert check(judged, "faithfulness").status == "pass"
    # the baseline's judge not trusted with it: not applied
    c = check(against_baseline(run(kb, p, [1.0] * n), base := run(
        kb, p, [1.0] * n, trusted=["faithfulness"])), "answer_relevance")
    assert c.status == "not applied" and c.message == (
        f"answer_relevance: the baseline run {base.run_id}'s answer judge was not trusted with "
        "relevance")


def test_answer_measures_belong_in_max_drop_only(tmp_path: Path, kb: GoldenSet) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("targets:\n  faithfulness: 0.9\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        run_gate(kb, results=_results(kb), policy=load_policy(path))
    assert str(exc.value) == (
        f"{path}:2: field 'targets.faithfulness': expected a rank measure name such as nDCG@10, "
        "RR, P@5, R@20, AP, found 'faithfulness' (an answer measure's floor is a policy key of "
        "its own: min_faithfulness, min_answer_relevance, max_hallucination_rate)")
    path.write_text("max_drop:\n  correctness: 0.1\n  faithfulnes: 0.1\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        run_gate(kb, results=_results(kb), policy=load_policy(path))
    assert str(exc.value) == (
        f"{path}:2: field 'max_drop.faithfulnes': expected a rank measure name such as nDCG@10, "
        "RR, P@5, R@20, AP, or an answer measure: faithfulness, answer_relevance, correctness, "
        "hallucination_rate, found 'faithfulnes' (did you mean 'faithfulness'?)")
