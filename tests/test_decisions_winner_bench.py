"""benchmarks/decisions_winner_bench.py, tiny: every case runs and records a rate with its
interval; variants equal to the base never win where the old rule picked one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # synthetic experiments, an hnswlib index rebuilt a dozen times (about 40 s)
def test_the_decisions_benchmark_runs_small(tmp_path: Path) -> None:
    out = tmp_path / "decisions.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "decisions_winner_bench.py"), "--seeds", "4",
         "--draws", "4", "--cost-runs", "2", "--skip-kb", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    cases = result["winner_synthetic"]
    assert [c["questions"] for c in cases[:3]] == [34, 82, 200]
    for case in cases:
        for rule in ("now", "before"):
            rate = case[rule]
            assert rate["runs"] == 4 and rate["ci"][0] <= rate["rate"] <= rate["ci"][1]
    reindex = result["reindex"]
    assert reindex["tolerance"] == 0.01 and reindex["pool"] == 2000
    far = next(c for c in reindex["candidates"] if c["candidate"] == "m=2")
    assert far["worse_than_tolerance"] and all(
        r["hits"] == 0 for r in far["by_probes"].values())  # never switched
    assert [e["switched"] for e in reindex["end_to_end"]] == [3, 0]
    assert "load average at start" in proc.stdout
