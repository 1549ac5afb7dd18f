"""The winner needs evidence: variants judged on known per-query scores (no building, no timing:
the outcomes and the side-by-side timings are given), so each test states the truth it checks.

A variant equal to the base never wins ("no variant beat the base: keep it", the winner is the
base); a variant better on tune and test wins, with delta, p, p after Holm and the number of
queries in the report; better on tune alone is not confirmed; a tie goes to the significantly
cheaper variant; dominated variants are marked, and a dominated winner is explained."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recallwatch.experiment.choice import choose
from recallwatch.experiment.evaluate import PartResult, VariantOutcome
from recallwatch.experiment.output import frontier, table_rows, to_markdown, to_text
from recallwatch.experiment.plan import load_plan
from recallwatch.experiment.runner import _judge
from recallwatch.experiment.timing import (
    Costs,
    compare_latencies,
    separate_costs,
    time_interleaved,
)
from tests.experiment.conftest import small_kb, write_plan

N = 24  # queries per part


def _part(quality: np.ndarray, ndcg: np.ndarray) -> PartResult:
    per_query = {f"q{i:02d}": {"quality": float(q), "recall": float(q) / 100, "ndcg": float(n),
                               "rr": float(n), "judged": 0.2}
                 for i, (q, n) in enumerate(zip(quality, ndcg, strict=True))}
    metrics: dict[str, float | None] = {
        "mean_quality": float(quality.mean()), "mean_recall": float(quality.mean()) / 100,
        "mean_ndcg": float(ndcg.mean()), "mrr": float(ndcg.mean()), "mean_fact_recall": None,
        "judged_at_k": 0.2}
    return PartResult("ACCEPT", metrics, per_query, 0, None, None)


def _outcome(name: str, tune: tuple[np.ndarray, np.ndarray],
             test: tuple[np.ndarray, np.ndarray] | None = None, p50: float = 10.0
             ) -> VariantOutcome:
    parts = {"tune": _part(*tune), "test": _part(*(test or tune))}
    return VariantOutcome(name, {"retrieval": "dense"}, {}, parts, None, None, 1.0)


def _scores(seed: int, shift_q: float = 0.0, shift_n: float = 0.0
            ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    quality = np.clip(rng.choice([0.0, 50.0, 100.0], size=N) + shift_q, 0, 100)
    ndcg = np.clip(rng.uniform(0.3, 0.8, size=N) + shift_n, 0, 1)
    return quality, ndcg


def _no_costs(*names: str) -> Costs:
    return separate_costs({n: {"search_p50_ms": 10.0, "latency_queries": N} for n in names})


def _timed(ms: dict[str, float]) -> Costs:
    """Side-by-side timings given, not measured: each variant's calls spread around its ms."""
    spread = np.linspace(0.9, 1.1, N)
    return compare_latencies({n: np.tile(spread * v / 1000.0, (3, 1)) for n, v in ms.items()})


BASE = _scores(1)


def test_variants_equal_to_the_base_keep_the_base() -> None:
    outcomes = [_outcome("base", BASE), _outcome("same-a", BASE), _outcome("same-b", BASE)]
    c = choose(outcomes, _no_costs("base", "same-a", "same-b"))
    assert c.winner == "base" and c.candidate is None and c.confirmed is None
    assert c.lines[0].startswith("no variant beat the base: keep it (base). On the 24 tune "
                                 "queries no variant's gain in mean quality or nDCG@K over it "
                                 "holds after Holm's correction across 2 variants × 2 measures")
    assert c.status == {"base": "base, kept", "same-a": "no evidence it beats base",
                        "same-b": "no evidence it beats base"}
    assert c.order == ["base", "same-a", "same-b"]


def test_a_better_variant_wins_with_its_evidence() -> None:
    quality, ndcg = BASE
    better = (np.minimum(quality + 50.0, 100.0), ndcg)
    outcomes = [_outcome("base", BASE), _outcome("same", BASE), _outcome("better", better)]
    c = choose(outcomes, _no_costs("base", "same", "better"))
    assert c.winner == "better" and c.confirmed is True
    tune = c.tune_tests["better"]["mean_quality"]
    assert tune["n"] == N and tune["p_gain_holm"] <= 0.05
    assert tune["p_gain"] == pytest.approx(tune["p"] / 2)  # the gain's side of a symmetric test
    assert c.lines[0] == "winner: better"
    assert c.lines[1] == (
        f"better beat the base (base) on the {N} tune queries: mean quality "
        f"{tune['delta']:+.1f}, p of a gain {tune['p_gain']:.2g}, after Holm "
        f"{tune['p_gain_holm']:.2g} (paired randomization tests of a gain, Holm across 2 "
        "variants × 2 measures)")
    conf = c.confirmation
    assert conf is not None and conf["n"] == N and conf["measure"] == "mean_quality"
    assert c.lines[2].startswith(f"confirmed on the test queries: mean quality "
                                 f"{conf['delta']:+.1f}, p of a gain {conf['p_gain']:.2g} on "
                                 f"the {N} test "
                                 "queries, which the choice never saw")
    assert c.order == ["better", "base", "same"]
    assert c.dominated_by["base"] == ["better"] and c.dominated_by["better"] == []
    assert "better is on the quality–cost front of the test queries" in c.lines


def test_better_ndcg_at_equal_quality_wins_on_ndcg() -> None:
    quality, ndcg = BASE
    outcomes = [_outcome("base", BASE), _outcome("ranks-higher", (quality, ndcg + 0.1))]
    c = choose(outcomes, _no_costs("base", "ranks-higher"))
    assert c.winner == "ranks-higher" and c.won_on == {"ranks-higher": "mean_ndcg"}
    assert ", mean quality +0.0 (not lower)" in c.lines[1]


def test_better_on_tune_only_is_not_confirmed_and_the_base_is_kept() -> None:
    quality, ndcg = BASE
    lucky = _outcome("lucky", (np.minimum(quality + 50.0, 100.0), ndcg), BASE)
    c = choose([_outcome("base", BASE), lucky], _no_costs("base", "lucky"))
    assert c.candidate == "lucky" and c.winner == "base" and c.confirmed is False
    assert c.lines[0] == ("no variant beat the base: keep it (base). lucky led on the tune "
                          "queries, but the test queries do not confirm it")
    assert any(line.startswith("NOT confirmed on the test queries: mean quality +0.0, p of a "
                               f"gain 0.5 on the {N} test queries") for line in c.lines)
    assert c.status["lucky"] == "beat base on tune; not confirmed on test"


def test_a_tie_goes_to_the_significantly_cheaper_variant() -> None:
    quality, ndcg = BASE
    better = (np.minimum(quality + 50.0, 100.0), ndcg)
    outcomes = [_outcome("base", BASE), _outcome("slow", better), _outcome("fast", better)]
    c = choose(outcomes, _timed({"base": 10.0, "slow": 30.0, "fast": 12.0}))
    assert c.tied == ["slow", "fast"] and c.winner == "fast"
    assert c.order == ["slow", "fast", "base"]  # the tune ranking (a tie keeps the plan's order)
    assert c.status["slow"] == "tied with fast; not cheaper"
    line = next(x for x in c.lines if x.startswith("slow, fast beat the base"))
    assert "the tie goes to the cheaper, fast (slow's latency is 2.50× fast's" in line
    assert c.dominated_by["slow"] == ["fast"]


def test_without_evidence_on_cost_the_tie_keeps_the_ranking() -> None:
    quality, ndcg = BASE
    better = (np.minimum(quality + 50.0, 100.0), ndcg)
    outcomes = [_outcome("base", BASE), _outcome("first", better), _outcome("second", better)]
    c = choose(outcomes, _no_costs("base", "first", "second"))
    assert c.winner == "first"
    assert any("none is significantly cheaper than first, which ranks first" in x
               for x in c.lines)


def test_a_dominated_winner_is_explained() -> None:
    quality, ndcg = BASE
    better = (np.minimum(quality + 50.0, 100.0), ndcg)
    # "quiet" matches the base on tune (no evidence) but scores highest on test, and is cheaper
    quiet = _outcome("quiet", BASE, (np.full(N, 100.0), ndcg + 0.2))
    outcomes = [_outcome("base", BASE), _outcome("better", better), quiet]
    c = choose(outcomes, _timed({"base": 10.0, "better": 20.0, "quiet": 10.0}))
    assert c.winner == "better" and c.dominated_by["better"] == ["quiet"]
    assert ("better is not on the quality–cost front of the test queries: the choice rests on "
            "the paired tests on the tune queries, and what dominates it there did not win "
            "them (quiet: no evidence it beats base)") in c.lines


def test_reports_and_results_json(tmp_path: Path) -> None:
    small_kb(tmp_path)
    plan = load_plan(write_plan(tmp_path, "{name: base}", ["{name: same}", "{name: worse}"]))
    quality, ndcg = BASE
    outcomes = [_outcome("base", BASE), _outcome("same", BASE),
                _outcome("worse", (np.maximum(quality - 50.0, 0.0), ndcg - 0.2))]
    result = _judge(plan, outcomes, {"corpus": [], "index": []}, {"corpus": [], "index": []},
                    _timed({"base": 10.0, "same": 10.0, "worse": 40.0}))
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["winner"] == "base" and data["base"] == "base"
    assert {"variants", "base", "winner", "chosen_on", "judged_on", "confirmed", "cache",
            "warnings", "summary", "choice"} <= set(data)
    by_name = {v["name"]: v for v in data["variants"]}
    assert by_name["worse"]["dominated_by"] == ["base", "same"]
    assert by_name["worse"]["choice"] == "worse than base"
    side = by_name["base"]["cost"]["side_by_side"]
    assert side["calls"] == 3 * N and side["p99"] is None  # 72 calls cannot bound a p99
    assert side["p50"]["low"] <= side["p50"]["value"] <= side["p50"]["high"]
    rows = table_rows(data)
    assert [r[0] for r in rows] == ["base (winner)", "same", "worse"]
    assert [r[1] for r in rows] == ["base, kept", "no evidence it beats base", "worse than base"]
    assert rows[2][-1] == "base, same" and rows[0][-1] == "—"
    assert rows[0][-3].startswith("10.0 [") and rows[0][-2] == "—"
    assert [p["frontier"] for p in frontier(data)] == [True, True, False]
    text, md = to_text(result), to_markdown(result)
    assert "no variant beat the base: keep it (base)" in text
    assert "p99 ms only over at least 368 calls" in text
    assert "| base \\(winner\\) | base, kept | ACCEPT |" in md


def test_old_results_without_the_choice_still_show() -> None:
    """results.json written before the choice was recorded: best quality first, the p99 hidden
    when too few calls bound it."""
    variant = {"metrics": {"mean_quality": 50.0, "mean_recall": 0.5, "mean_ndcg": 0.5,
                           "mrr": 0.5, "mean_fact_recall": None},
               "cost": {"ingest_seconds": None, "store_bytes": None, "search_p50_ms": 5.0,
                        "search_p99_ms": 9.0, "latency_queries": 41},
               "verdict": "STOP", "vs_base": {}}
    data = {"variants": [{**variant, "name": "a"},
                         {**variant, "name": "b", "metrics": {**variant["metrics"],
                                                              "mean_quality": 80.0}}],
            "base": "a", "winner": "b", "judged_on": "test"}
    rows = table_rows(data)
    assert [r[0] for r in rows] == ["b (winner)", "a"]
    assert rows[0][-3:] == ["5.0", "—", "—"]


def test_interleaved_timing_shuffles_the_order_and_keeps_every_call() -> None:
    calls: list[str] = []
    ticks = iter(range(10_000))
    collected: list[int] = []

    def clock() -> float:
        return float(next(ticks))

    searches = {n: (lambda text, n=n: calls.append(f"{n}:{text}")) for n in ("a", "b", "c")}
    seconds = time_interleaved(searches, ["x", "y"], 2, clock=clock,
                               collect=lambda: collected.append(len(calls)))
    assert len(calls) == 3 * 2 * 3  # an untimed round, then two timed ones
    assert collected == list(range(0, 18, 3))  # a collection before each query's calls
    for start in range(0, 18, 3):  # each query: every variant once, in some order
        chunk = calls[start:start + 3]
        assert sorted(c.split(":")[0] for c in chunk) == ["a", "b", "c"]
        assert len({c.split(":")[1] for c in chunk}) == 1
    orders = {tuple(c.split(":")[0] for c in calls[s:s + 3]) for s in range(0, 18, 3)}
    assert len(orders) > 1  # not one fixed order
    assert {n: s.shape for n, s in seconds.items()} == {n: (2, 2) for n in "abc"}
    assert all(np.all(s == 1.0) for s in seconds.values())
    again: list[str] = []
    searches = {n: (lambda text, n=n: again.append(f"{n}:{text}")) for n in ("a", "b", "c")}
    time_interleaved(searches, ["x", "y"], 2, clock=clock, collect=lambda: None)
    assert again == calls  # seeded: the same order every time


def test_costs_relation_needs_a_significant_test() -> None:
    costs = _timed({"a": 10.0, "b": 10.0, "c": 20.0})
    assert costs.relation("a", "b") == 0 and costs.relation("a", "c") == -1
    assert costs.relation("c", "a") == 1
    assert costs.comparison("a", "c").startswith("c's latency is 2.00× a's (95 % interval")
    assert separate_costs({"a": {"search_p50_ms": 1.0}}).relation("a", "a") == 0


@pytest.mark.parametrize("rounds", [0, -1])
def test_interleaved_timing_needs_a_round(rounds: int) -> None:
    from recallwatch.errors import UsageError

    with pytest.raises(UsageError, match="timing rounds must be at least 1"):
        time_interleaved({"a": lambda t: None}, ["x"], rounds)
