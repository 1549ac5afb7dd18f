"""`recallwatch gate` without --policy: an ideal ranking of a golden set with few expected chunks
per query is accepted, and the noise rule says why it could not measure them; judged results make
it measure, and a noise STOP then names the default ceiling and the fix."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from recallwatch.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

GOLDEN = """\
name: few-expected
version: "1"
queries:
  - {id: q1, text: "uno", expected: [a], domain: rrhh}
  - {id: q2, text: "dos", expected: [b], domain: rrhh}
"""
POLICY = "noise_ceiling: {default: 0.30, per_domain: {rrhh: 0.90}}\n"


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    golden, results, policy = (tmp_path / n for n in ("golden.yaml", "r.jsonl", "policy.yaml"))
    golden.write_text(GOLDEN, encoding="utf-8")
    policy.write_text(POLICY, encoding="utf-8")
    # Each expected chunk ranked first, nine lower-scoring results under it: an ideal ranking.
    results.write_text("".join(json.dumps({"query_id": q, "results": [
        {"id": cid, "score": 0.9 - 0.01 * i} for i, cid in enumerate([hit, *"mnopqrstu"])]}) + "\n"
        for q, hit in (("q1", "a"), ("q2", "b"))), encoding="utf-8")
    return golden, results, policy


def test_without_policy_an_ideal_ranking_is_accepted_and_the_noise_rule_says_why(
        tmp_path: Path) -> None:
    golden, results, _ = _files(tmp_path)
    r = runner.invoke(app, ["gate", str(golden), "--results", str(results), "--no-history"])
    assert r.exit_code == 0, r.output
    assert "noise rule not measured on 2 of 2 queries (q1, q2): they list 1 expected chunk" \
        in r.stdout
    assert "note:" not in r.stderr


def test_without_policy_a_noise_stop_names_the_default_ceiling_and_the_fix(tmp_path: Path) -> None:
    golden, results, _ = _files(tmp_path)
    judged = tmp_path / "judged.qrels"  # every other result judged not relevant
    judged.write_text("".join(f"{q} 0 {c} 0\n" for q in ("q1", "q2") for c in "mnopqrstu"))
    r = runner.invoke(app, ["gate", str(golden), "--results", str(results), "--no-history",
                            "--judgments", str(judged), "--format", "json"])
    assert r.exit_code == 1
    assert ("note: no --policy given, so the default noise ceiling 0.30 applies to every query "
            "(at most 3 of the top 10 may score below the query's worst expected chunk); "
            "2 of the 2 failing queries fail on that rule alone, with their expected chunks "
            "found. Calibrate per-domain ceilings on a run with enough healthy queries "
            "(`recallwatch ops calibrate-noise` prints them) and pass them with --policy."
            ) in r.stderr
    assert "note:" not in r.stdout
    (unwaived,) = [x for x in json.loads(r.stdout)["reasons"] if x["rule"] == "unwaived_failure"]
    assert "q1 (noise: 9 of the top 10 score below its worst expected chunk, 3 allowed; recall " \
        "is 1.000)" in unwaived["message"]


def test_with_a_policy_there_is_no_note(tmp_path: Path) -> None:
    golden, results, policy = _files(tmp_path)
    r = runner.invoke(app, ["gate", str(golden), "--results", str(results), "--policy",
                            str(policy), "--no-history"])
    assert r.exit_code == 0 and "note:" not in r.stderr
