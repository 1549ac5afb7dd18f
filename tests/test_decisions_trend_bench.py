"""benchmarks/decisions_trend_bench.py, tiny: it runs, records each rate with its interval, and
the corrected threshold never fires where the per-measure one did not (same series, stricter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_trend_decisions_benchmark_runs_small(tmp_path: Path) -> None:
    out = tmp_path / "trend.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "decisions_trend_bench.py"), "--trials", "40",
         "--runs", "6,12", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["settings"]["measures"] == ["faithfulness", "answer_relevance", "correctness",
                                              "hallucination_rate"]
    for n in ("6", "12"):
        row = result["figures"][n]
        for rate in row.values():
            assert rate["trials"] == 40 and rate["ci"][0] <= rate["rate"] <= rate["ci"][1]
        assert row["answers_bonferroni"]["hits"] <= row["answers_per_measure_alpha"]["hits"]
        assert row["detect_bonferroni"]["hits"] <= row["detect_per_measure_alpha"]["hits"]
    assert "12 runs: unchanged, one measure" in proc.stdout
