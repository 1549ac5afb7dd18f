"""The pytest11 plugin, exercised in a real inner pytest session (pytester)."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

GOLDEN = {"name": "plug", "version": "1", "queries": [
    {"id": "q1", "text": "pregunta", "expected": ["a"], "gold": ["a"]}]}


def results(rank: int) -> str:
    ids = [f"x{i}" for i in range(1, 21)]
    ids[rank - 1] = "a"
    return json.dumps({"query_id": "q1", "results": [
        {"id": c, "score": 1 - i / 100} for i, c in enumerate(ids)]}) + "\n"


@pytest.mark.parametrize(("rank", "outcome"), [(7, "passed"), (15, "failed")])
def test_fixture_fails_the_test_on_stop(pytester: pytest.Pytester, rank: int,
                                        outcome: str) -> None:
    pytester.makefile(".json", golden=json.dumps(GOLDEN))
    pytester.makefile(".jsonl", results=results(rank))
    pytester.makepyfile(test_kb="""
        def test_gate(recallwatch_gate):
            result = recallwatch_gate("golden.json", results="results.jsonl")
            assert result.verdict == "ACCEPT"
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        res.stdout.fnmatch_lines([
            "*recallwatch gate: STOP*", "*[gold_failure]*q1*", "*q1: recall 0.000*",
        ])


def test_report_option_writes_the_same_set_as_the_gate_command(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", golden=json.dumps(GOLDEN))
    pytester.makefile(".jsonl", results=results(7))
    pytester.makepyfile(test_kb="""
        def test_gate(recallwatch_gate):
            recallwatch_gate("golden.json", results="results.jsonl")
    """)
    out = pytester.path / "reports"
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--recallwatch-report={out}")
    res.assert_outcomes(passed=1)
    from recallwatch.report import REPORT_FILES

    assert sorted(p.name for p in (out / "test_gate").iterdir()) == sorted(REPORT_FILES)
    assert (out / "test_gate" / "report.html").read_text().startswith("<!doctype html>")
    assert json.loads((out / "test_gate" / "report.json").read_text())["verdict"] == "ACCEPT"
