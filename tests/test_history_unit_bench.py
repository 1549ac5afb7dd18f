"""benchmarks/history_unit_bench.py, tiny: both steps run at two sizes, the record's growth is
measured apart from the gate, and ``history prune`` removes every run outside the window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # seven Python processes, about 15 s
def test_recording_and_prune_are_measured_at_two_sizes(tmp_path: Path) -> None:
    out = tmp_path / "history.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "history_unit_bench.py"),
         "--record-queries", "20", "200", "--record-base", "500", "--dim", "16",
         "--prune-runs", "15", "40", "--keep-last", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "RECALLWATCH_CACHE": "0", "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    record, prune = result["record"], result["prune"]
    assert [r["n"] for r in record["runs"]] == [20, 200]
    for r in record["runs"]:
        assert r["growth_bytes"] == r["peak_after_bytes"] - r["rss_before_bytes"] >= 0
        assert r["traced_peak_bytes"] > 0
        assert 0 < r["zlib_bytes"] < r["json_chars"]
    # one summary per run, every run outside the window removed (one dataset: the latest kept)
    assert [(r["runs"], r["removed"]) for r in prune["runs"]] == [(15, 12), (40, 37)]
    assert all(r["peak_bytes"] > 0 for r in prune["runs"])
    assert "prune  memory per run in the history" in proc.stdout
