"""The monitor's alarms that need no interaction log: coverage under --min-coverage and the
probes' p99 latency over --max-probe-latency-p99 (or the policy's max_latency_p99_ms), each exit 1
and each recorded, with its threshold, in the monitor's record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.datasets import synthetic
from recallwatch.cli import app
from recallwatch.embedders.base import FINGERPRINT_META_KEY, Fingerprint
from recallwatch.history import History
from recallwatch.ops.calibrate import ThresholdCalibration, store_threshold
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore

runner = CliRunner(env={"COLUMNS": "200"})
FP = Fingerprint("toy", "1", 16, "a" * 64)
# Latency bounds no machine can miss: no search takes under a nanosecond or over 17 minutes.
NEVER_MET_MS, ALWAYS_MET_MS = "0.000001", "1000000"


def run(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, Path]:
    """An exact store of 500 rows with a no-result threshold of 0.999 for its embedder, and 20
    probes: 10 of its own vectors (top score 1: answered) and their 10 opposites (not)."""
    data = synthetic(500, 16, topics=4, queries=4, seed=3)
    uri = f"lancedb://{tmp_path / 's'}?table=t&index_threshold=1000000"
    lance = LanceStore.open(uri, create=True)
    lance.upsert([Chunk(id=f"c{i:03d}", text="") for i in range(500)], data.base)
    lance.set_meta(FINGERPRINT_META_KEY, FP.to_dict())
    store_threshold(lance, ThresholdCalibration(0.999, "precision", 0.95, 1.0, 1.0, True, 1, 1,
                                                (), FP.to_dict()))
    lance.close()
    own = np.asarray(data.base[:10], dtype=np.float32)
    probes = tmp_path / "probes.npy"
    np.save(probes, np.vstack([own, -own]))
    return uri, probes


def monitor(uri: str, probes: Path, *extra: str) -> Any:
    return run("ops", "monitor", "--store", uri, "--probes", str(probes), "--k", "5",
               "--floor", "0", *extra)


def test_coverage_alarms_without_a_log(store: tuple[str, Path], tmp_path: Path) -> None:
    uri, probes = store
    db = tmp_path / "h.db"
    low = monitor(uri, probes, "--min-coverage", "0.6", "--history", str(db))
    assert low.exit_code == 1, low.output
    assert "coverage           50.0% of probes with a result ≥ 0.9990" in low.stdout
    assert "(the calibrated no-result threshold; min 60%)" in low.stdout
    assert "ALARM: coverage 50.0% is under the minimum 60%" in low.stdout
    (record,) = History(db).monitor_runs(kind="monitor")
    assert record.status == "alarm" and record.payload["live"] is None  # no log read
    assert record.payload["coverage"] == pytest.approx(0.5)
    assert record.payload["thresholds"]["min_coverage"] == 0.6
    ok = monitor(uri, probes, "--min-coverage", "0.5", "--no-history")
    assert ok.exit_code == 0 and ok.stdout.endswith("OK\n")


def test_probe_latency_p99_alarms_from_the_option(store: tuple[str, Path]) -> None:
    uri, probes = store
    slow = monitor(uri, probes, "--min-coverage", "0", "--no-history", "--format", "json",
                   "--max-probe-latency-p99", NEVER_MET_MS)
    assert slow.exit_code == 1, slow.output
    d = json.loads(slow.stdout)
    assert d["thresholds"]["max_latency_p99_ms"] == float(NEVER_MET_MS)
    (alarm,) = d["alarms"]
    evidence = d["latency"]
    assert evidence["status"] == "over" and evidence["cap_ms"] == float(NEVER_MET_MS)
    # the 20 probes are searched again in rounds for the 368 calls a p99 needs (within 10 s:
    # on a machine too busy for that, the interval's low end decides alone; tests/ops/
    # test_probe_latency.py checks both with injected latencies)
    if evidence["calls"] == 368:
        p99, (low, high) = d["latency_ms"]["p99"], evidence["p99_ci_ms"]
        assert alarm == (f"probe latency p99 is {p99:.2f} ms, over the maximum 1e-06 ms (95 % "
                         f"interval {low:.2f}–{high:.2f} ms over 368 calls: the 20 probes, one "
                         "live search each, taken again in rounds: the whole interval is above "
                         "the maximum); look at the index parameters, the store's load and its "
                         "machine")
    else:
        assert alarm.startswith("probe latency p99 is ") and "(the low end of its 95 % " \
            "interval, " in alarm
    fast = monitor(uri, probes, "--min-coverage", "0", "--no-history",
                   "--max-probe-latency-p99", ALWAYS_MET_MS)
    assert fast.exit_code == 0, fast.output
    assert "p99 max 1e+06 ms)" in fast.stdout


def test_probe_latency_cap_comes_from_the_policy(store: tuple[str, Path],
                                                 tmp_path: Path) -> None:
    uri, probes = store
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"max_latency_p99_ms: {NEVER_MET_MS}\n", encoding="utf-8")
    out = monitor(uri, probes, "--min-coverage", "0", "--no-history", "--policy", str(policy))
    assert out.exit_code == 1 and "ALARM: probe latency p99 is" in out.stdout
    # the option wins over the policy
    over = monitor(uri, probes, "--min-coverage", "0", "--no-history", "--policy", str(policy),
                   "--max-probe-latency-p99", ALWAYS_MET_MS)
    assert over.exit_code == 0, over.output
    # without either, no cap: said, never an alarm
    none = monitor(uri, probes, "--min-coverage", "0", "--no-history")
    assert none.exit_code == 0 and "no maximum set)" in none.stdout


@pytest.mark.parametrize("bad", ["0", "-3", "nan"])
def test_a_bad_latency_cap_is_a_usage_error(store: tuple[str, Path], bad: str) -> None:
    uri, probes = store
    out = monitor(uri, probes, "--no-history", "--max-probe-latency-p99", bad)
    assert out.exit_code == 2, out.output
    assert "max_latency_p99_ms" in out.stderr and "positive number of milliseconds" in out.stderr
