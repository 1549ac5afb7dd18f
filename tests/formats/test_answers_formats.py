"""The answer rules of a policy, a golden query's reference answer: read, bounded, hashed only
when set (a policy or a golden set without them keeps its hash)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallwatch.errors import InputError
from recallwatch.formats.golden import load_golden
from recallwatch.formats.policy import Policy, load_policy


def test_answer_rules_are_read_and_hashed_only_when_set(tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text("recall_floor: 0.9\n", encoding="utf-8")
    ruled = tmp_path / "ruled.yaml"
    ruled.write_text("recall_floor: 0.9\nmin_faithfulness: 0.9\nmax_hallucination_rate: 0.05\n",
                     encoding="utf-8")
    assert load_policy(plain).hash == Policy(source=str(plain)).hash
    policy = load_policy(ruled)
    assert policy.answers.rules_dict() == {"min_faithfulness": 0.9,
                                           "max_hallucination_rate": 0.05}
    assert policy.hash != load_policy(plain).hash
    assert policy.rules_dict()["max_hallucination_rate"] == 0.05


def test_an_answer_rule_is_a_fraction(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("min_answer_relevance: 80\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_policy(bad)
    assert str(exc.value) == (f"{bad}:1: field 'min_answer_relevance': expected a number in "
                              "[0, 1], found 80")


def test_a_reference_answer_is_kept_and_hashed_only_when_given(tmp_path: Path) -> None:
    base = "name: g\nversion: '1'\nqueries:\n  - {id: q1, text: t, expected: [c1]"
    without, with_ref = tmp_path / "a.yaml", tmp_path / "b.yaml"
    without.write_text(base + "}\n", encoding="utf-8")
    with_ref.write_text(base + ", reference: 'El plazo es de un mes.'}\n", encoding="utf-8")
    plain, ref = load_golden(without), load_golden(with_ref)
    assert plain.queries[0].reference is None and "reference" not in plain.queries[0].to_dict()
    assert ref.queries[0].reference == "El plazo es de un mes."
    assert ref.hash != plain.hash
