"""`recallwatch gate` without --policy says why queries that are ranked ideally still fail: the
default noise ceiling, which a golden set with few expected chunks per query always exceeds."""

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


def test_without_policy_a_noise_stop_names_the_default_ceiling_and_the_fix(tmp_path: Path) -> None:
    golden, results, _ = _files(tmp_path)
    r = runner.invoke(app, ["gate", str(golden), "--results", str(results), "--no-history"])
    assert r.exit_code == 1
    assert ("note: no --policy given, so the default noise ceiling 0.30 applies to every query "
            "(at most 3 of the top 10 may score below the query's worst expected chunk); "
            "2 of the 2 failing queries fail on that rule alone. A query that expects fewer than "
            "7 chunks exceeds it even when ranked ideally: pass --policy with per-domain ceilings "
            "calibrated on a healthy run (`recallwatch calibrate-noise` prints them).") in r.stderr
    assert "note:" not in r.stdout


def test_with_a_policy_there_is_no_note(tmp_path: Path) -> None:
    golden, results, policy = _files(tmp_path)
    r = runner.invoke(app, ["gate", str(golden), "--results", str(results), "--policy",
                            str(policy), "--no-history"])
    assert r.exit_code == 0 and "note:" not in r.stderr
