"""The exit-code loop (benchmarks/exit_codes.py), short: every run exits with the right code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_repeated_eval_and_gate_runs_all_exit_with_the_right_code(tmp_path: Path) -> None:
    out = tmp_path / "exit_codes.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "exit_codes.py"), "--eval", "150",
         "--gate", "12", "--workers", "3", "--dir", str(tmp_path / "work"), "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary["wrong_exit_codes"] == 0
    assert summary["runs"] == {"eval": 150, "gate results pass": 3, "gate results fail": 3,
                               "gate store": 6}
