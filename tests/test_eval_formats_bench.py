"""benchmarks/eval_formats_bench.py, tiny: the Arrow run is read in blocks and gives the values
of the Parquet run and of the same file read whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # seven Python processes, about 15 s
def test_the_arrow_run_is_evaluated_in_blocks_like_the_parquet_run(tmp_path: Path) -> None:
    out = tmp_path / "formats.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eval_formats_bench.py"), "--kinds",
         "parquet", "arrow", "--queries", "30", "300", "--depth", "10", "--whole",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "RECALLWATCH_CACHE": "0", "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    arrow, whole, parquet = result["arrow"], result["arrow-whole"], result["parquet"]
    assert [r["lines"] for r in arrow["runs"]] == [300, 3000]
    assert all(r["blocks"] >= 1 and not r["read_whole"] for r in arrow["runs"])
    for mine, other in [(arrow, whole), (arrow, parquet)]:  # the script checks this too
        assert [r["aggregate"] for r in mine["runs"]] == [r["aggregate"] for r in other["runs"]]
    assert "arrow            memory per run line" in proc.stdout
