"""The chapter's worked examples (SPEC §2), exactly."""

from __future__ import annotations

import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.formats.policy import Policy
from tests.acceptance.helpers import golden, ranked


def test_irpf_query_recall_two_thirds_quality_zero_fails() -> None:
    g = golden({"id": "irpf", "text": "¿Cómo se calcula el IRPF 2025 para autónomos?",
                "expected": ["gold_001", "silver_legal_045", "silver_finanzas_123"],
                "gold": ["gold_001"]})
    res = run_gate(g, results={"irpf": ranked(
        {"gold_001": 1, "silver_legal_045": 3, "silver_finanzas_123": 15})})
    q = res.query("irpf")
    assert q.recall == pytest.approx(2 / 3)
    assert round(q.recall, 3) == 0.667
    assert q.quality == 0
    assert not q.passed and "recall" in q.failed_rules
    ranks = {h.id: h.rank for h in q.expected}
    assert ranks == {"gold_001": 1, "silver_legal_045": 3, "silver_finanzas_123": 15}
    assert res.verdict == "STOP"
    assert {r.rule for r in res.reasons} >= {"mean_quality", "gold_failure"}


def test_asuntos_propios_ranks_one_and_two_recall_one_quality_100() -> None:
    g = golden({"id": "asuntos", "text": "¿Cuántos días de asuntos propios corresponden?",
                "expected": ["silver_art_012", "gold_003"], "gold": ["gold_003"],
                "domain": "rrhh"})
    results = {"asuntos": ranked({"silver_art_012": 1, "gold_003": 2})}
    # Calibrated ceiling for this domain (the chapter: calibrate per domain on the first suite).
    policy = Policy(noise_ceiling_per_domain={"rrhh": 0.8})
    res = run_gate(g, results=results, policy=policy)
    q = res.query("asuntos")
    assert (q.recall, q.quality) == (1.0, 100.0)
    assert q.passed and res.verdict == "ACCEPT"
    assert q.rr == 1.0
    # To the letter of the 30 % rule, with a golden set that lists every relevant chunk, the 8
    # results below the worst expected chunk are noise.
    strict = run_gate(g, results=results,
                      policy=Policy(noise_unlisted="irrelevant")).query("asuntos")
    assert strict.quality == 100.0 and strict.noise == 8 and strict.failed_rules == ("noise",)
    # By default those 8 are unknown (nobody listed or judged them): the rule cannot measure
    # this query, and an ideal ranking is not stopped.
    default = run_gate(g, results=results).query("asuntos")
    assert default.noise == 8 and not default.noise_measured and default.passed


@pytest.mark.parametrize(("rank", "noise", "passes"), [(6, 4, False), (7, 3, True)])
def test_noise_four_fails_three_passes_with_recall_one(rank: int, noise: int, passes: bool) -> None:
    g = golden({"id": "q", "text": "x", "expected": ["e1"]})
    q = run_gate(g, results={"q": ranked({"e1": rank})},
                 policy=Policy(noise_unlisted="irrelevant")).query("q")
    assert q.recall == 1.0 and q.noise == noise and q.allowed_noise == 3
    assert q.passed is passes
    assert ("noise" in q.failed_rules) is not passes


@pytest.mark.parametrize(("recall_hits", "expected_quality"), [(9, 0.0), (10, 100.0)])
def test_quality_scale_is_strict(recall_hits: int, expected_quality: float) -> None:
    expected = [f"e{i}" for i in range(10)]
    placed = {cid: i + 1 for i, cid in enumerate(expected[:recall_hits])}
    g = golden({"id": "q", "text": "x", "expected": expected})
    q = run_gate(g, results={"q": ranked(placed)}).query("q")
    assert q.quality == expected_quality  # recall 0.9 -> 0, recall 1 -> 100


def test_quality_linear_between_floor_and_one() -> None:
    from recallwatch.acceptance.score import quality_score

    assert quality_score(0.95, 0.90) == pytest.approx(50.0)
    assert quality_score(0.8999, 0.90) == 0.0
    assert quality_score(1.0, 0.90) == 100.0
