"""A golden set too small for its policy is warned about, with the arithmetic: in every gate
report (JSON key ``golden_size``) and in ``golden check``; the verdict does not change."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.golden_size import golden_size, size_findings, size_warning
from recallwatch.cli import app
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy, parse_policy
from recallwatch.formats.results import RankedList
from recallwatch.report.junit import to_junit
from recallwatch.report.markdown import to_markdown

DEFAULT = Policy()


def _golden(n: int) -> GoldenSet:
    return GoldenSet.from_dict({"name": "tiny", "version": "1", "top_k": 2, "queries": [
        {"id": f"q{i}", "text": f"question {i}", "expected": [f"c{i}"]} for i in range(n)]})


def test_two_queries_cannot_resolve_the_default_tolerance() -> None:
    rules = {f.rule: f for f in size_findings(2, DEFAULT)}
    assert set(rules) == {"failure_rate", "mean_quality"}
    assert rules["failure_rate"].message == (
        "with 2 queries one failing query is 50% of the set: the 5% tolerance of other failing "
        "queries (other_failures_allowed) cannot be met or missed by less than one query, so it "
        "tolerates none; it tolerates one from 20 queries on")
    assert rules["failure_rate"].needed == 20
    assert rules["mean_quality"].message == (
        "with 2 queries one query scoring 0 lowers the mean quality by 50.0 points, more than "
        "the 5 between a perfect run and min_mean_quality 95: one failing query decides the "
        "rule; from 20 queries on it takes more than one")


def test_the_thresholds_are_where_one_query_stops_deciding() -> None:
    assert [f.rule for f in size_findings(19, DEFAULT)] == ["failure_rate", "mean_quality"]
    assert size_findings(20, DEFAULT) == [] and golden_size(20, DEFAULT) is None
    loose = Policy(other_failures_allowed=0.10, min_mean_quality=90.0)
    assert size_findings(9, loose) and not size_findings(10, loose)
    strict = Policy(other_failures_allowed=0.0, min_mean_quality=100.0)
    assert size_findings(1, strict) == []  # no tolerance, no margin: nothing to resolve


def test_targets_and_max_drop(tmp_path: Path) -> None:
    policy = parse_policy({"targets": {"nDCG@10": 0.8}, "max_drop": {"RR": 0.05}},
                          tmp_path / "p.yaml")
    found = {f.rule: f for f in size_findings(5, policy)}
    assert found["max_drop"].message == (
        "max_drop can never block with 5 queries: the smallest p-value a paired test over 5 "
        "queries can give is 0.0625 over 1 measure, above 0.05, so no drop can be told from "
        "chance; that takes at least 6 queries")
    assert "target" not in found  # 1/5 = 0.20 is not more than 1 - 0.8
    assert "target nDCG@10 0.8: with 4 queries one query moves the mean by up to 0.25" in (
        size_warning(4, policy) or "")
    two = parse_policy({"max_drop": {"RR": 0.05, "nDCG@10": 0.02}}, tmp_path / "q.yaml")
    assert {f.rule: f.needed for f in size_findings(6, two)}["max_drop"] == 7
    assert "max_drop" not in {f.rule for f in size_findings(7, two)}


def test_every_gate_report_carries_the_warning() -> None:
    golden = _golden(2)
    results = {f"q{i}": RankedList([f"c{i}", "x"], np.array([0.9, 0.1])) for i in range(2)}
    result = run_gate(golden, results=results, policy=Policy(noise_ceiling=1.0))
    assert result.verdict == "ACCEPT"  # a warning, never the verdict
    (warning,) = [w for w in result.warnings if w.startswith("the golden set is too small")]
    assert warning.startswith("the golden set is too small for its policy (2 queries scored): "
                              "with 2 queries one failing query is 50% of the set")
    assert warning.endswith("Rules like these are meant for sets of about 50 queries or more "
                            "(at 5%, 50 queries tolerate 2 failing ones): add queries")
    body = result.to_dict()
    assert body["golden_size"]["queries"] == 2 and body["golden_size"]["recommended"] == 50
    assert [f["rule"] for f in body["golden_size"]["findings"]] == ["failure_rate",
                                                                    "mean_quality"]
    assert "### Warnings" in to_markdown(result) and "50% of the set" in to_markdown(result)
    assert "warning: the golden set is too small" in to_junit(result)


def test_golden_check_reports_the_size(tmp_path: Path) -> None:
    golden = tmp_path / "g.yaml"
    golden.write_text(json.dumps(_golden(2).to_dict()), encoding="utf-8")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "text": f"chunk {i}"}) + "\n"
                              for i in range(2)), encoding="utf-8")
    res = CliRunner().invoke(app, ["golden", "check", str(golden), "--corpus", str(corpus)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1].startswith(
        "warning: the golden set is too small for its policy (2 queries scored): with 2 queries "
        "one failing query is 50% of the set")
    policy = tmp_path / "p.yaml"
    policy.write_text("other_failures_allowed: 0\nmin_mean_quality: 100\n", encoding="utf-8")
    quiet = CliRunner().invoke(app, ["golden", "check", str(golden), "--corpus", str(corpus),
                                     "--policy", str(policy), "--format", "json"])
    assert quiet.exit_code == 0 and json.loads(quiet.output)["golden_size"] is None
    loud = CliRunner().invoke(app, ["golden", "check", str(golden), "--corpus", str(corpus),
                                    "--format", "json"])
    assert json.loads(loud.output)["golden_size"]["findings"][0]["needed"] == 20
