"""benchmarks/decisions_monitor_bench.py, tiny: every alarm's case runs and records a rate with
its interval; what does not depend on the machine is checked (an index far under the floor is
always caught, the unchanged index never; a quarter of new rows from unseen topics is drift)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _rates(node: object) -> list[dict[str, object]]:
    """Every rate in the figures (a dict with hits, runs, rate and ci)."""
    if isinstance(node, dict):
        if {"hits", "runs", "rate", "ci"} <= set(node):
            return [node]
        return [r for v in node.values() for r in _rates(v)]
    if isinstance(node, list):
        return [r for v in node for r in _rates(v)]
    return []


@pytest.mark.slow  # four hnswlib indexes, two LanceDB stores, a dozen monitor runs (about 60 s)
def test_the_monitor_decisions_benchmark_runs_small(tmp_path: Path) -> None:
    out = tmp_path / "monitor.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "decisions_monitor_bench.py"), "--rounds",
         "2", "--changed", "1", "--drift-rounds", "2", "--live-rounds", "2", "--busy", "0",
         "--out", str(out)],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    assert set(result["alarms"]) == {"recall_floor", "latency_cap", "drift", "live_signals"}
    assert set(result["inputs_sha256"]) >= {"rows", "recall_probes", "recall_pool",
                                             "latency_probes", "drift_new_topics", "live_logs"}
    assert result["settings"]["rounds"] == 2 and result["machine"]["load_before"]
    for rate in _rates(result["alarms"]):
        if rate["runs"]:
            low, high = rate["ci"]  # type: ignore[misc]
            assert low <= rate["rate"] <= high  # type: ignore[operator]
    recall = result["alarms"]["recall_floor"]["indexes"]
    assert recall["m=16 (live)"]["monitor_runs"]["hits"] == 0
    assert recall["m=16 (live)"]["true_recall"] > 0.95 > recall["m=4"]["true_recall"]
    assert recall["m=4"]["monitor_runs"] == {"hits": 1, "runs": 1, "rate": 1.0,
                                             "ci": recall["m=4"]["monitor_runs"]["ci"]}
    latency = result["alarms"]["latency_cap"]
    assert set(latency["by_change"]) == {f"{change}, {load}" for load in ("idle", "loaded")
                                         for change in ("unchanged", "3x slower", "10x slower")}
    assert all(calls <= 368 for calls in latency["by_change"]["unchanged, idle"]["calls"])
    drift = result["alarms"]["drift"]["by_share"]
    assert drift["25% from new topics"]["alarms"]["hits"] == 1
    assert all(p is not None for p in drift["same distribution"]["p_values"])
    live = result["alarms"]["live_signals"]["cases"]
    assert live["unchanged"]["any_alarm_now"]["runs"] == 2
    assert live["no-result rate 0.28 → 0.40"]["by_signal_now"]["no-result rate"]["hits"] == 1
