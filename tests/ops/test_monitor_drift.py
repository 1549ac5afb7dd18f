"""The monitor's drift test on a real LanceDB index: rows written since the index was trained,
drawn from the trained rows' distribution or shifted away from it; the alarm set by the policy's
drift_alarm_p, read by `ops monitor --policy`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import InputError
from recallwatch.formats.policy import Policy, load_policy
from recallwatch.ops.drift_stats import (
    MAX_PERMUTATIONS,
    PERMUTATIONS,
    out_of_reach,
    permutations_for,
)
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore
from tests.ops.test_monitor import small_store


def _add(store: LanceStore, vectors: np.ndarray) -> None:
    rows = [Chunk(id=f"n{i:04d}", text="") for i in range(len(vectors))]
    store.upsert(rows, vectors.astype(np.float32))


def test_shifted_rows_alarm_through_the_policy(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    rng = np.random.default_rng(0)
    _add(store, data.base[:300] + 1.0 + 0.5 * rng.normal(size=(300, 16)))
    np.save(tmp_path / "p.npy", data.queries)
    (tmp_path / "policy.yaml").write_text("drift_alarm_p: 0.01\n")
    out = CliRunner().invoke(app, ["ops", "monitor", "--store", store.uri, "--probes",
                                   str(tmp_path / "p.npy"), "--floor", "0", "--no-history",
                                   "--policy", str(tmp_path / "policy.yaml"), "--format", "json"])
    assert out.exit_code == 1, out.output
    report = json.loads(out.stdout)
    test = report["drift"]["test"]
    assert test["p_value"] < 0.01 and test["ks_share_drifted"] > 0.5
    assert (test["reference_rows"], test["current_rows"]) == (1000, 300)
    assert "mean_cosine_distance" in report["drift"]  # the earlier keys stay
    assert any(a.startswith("data drift: ") for a in report["alarms"])
    text = CliRunner().invoke(app, ["ops", "monitor", "--store", store.uri, "--probes",
                                    str(tmp_path / "p.npy"), "--floor", "0", "--no-history"])
    assert text.exit_code == 0, text.output  # without the policy, drift never alarms
    assert "two-sample test  MMD²" in text.stdout


def test_rows_from_the_trained_distribution_do_not_alarm(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    rng = np.random.default_rng(2)
    # drawn from the trained rows themselves (the empirical distribution), slightly jittered
    picked = data.base[rng.choice(len(data.base), 300, replace=False)]
    _add(store, picked + 0.001 * rng.normal(size=picked.shape))
    report = run_monitor(store, ProbeSet("p", "1", vectors=data.queries), k=10, floor=0.0,
                         drift_alarm_p=0.01)
    assert report.drift is not None and report.drift.test is not None
    assert report.drift.test.p_value >= 0.01
    assert not any(a.startswith("data drift") for a in report.alarms)


def test_policy_field_is_checked_and_located(tmp_path: Path) -> None:
    assert Policy().drift_alarm_p is None
    good = tmp_path / "ok.yaml"
    good.write_text("drift_alarm_p: 0.05\n")
    policy = load_policy(good)
    assert policy.drift_alarm_p == 0.05
    assert policy.hash == Policy().hash  # a monitor setting: the gate's policy hash is unchanged
    bad = tmp_path / "bad.yaml"
    bad.write_text("recall_floor: 0.9\ndrift_alarm_p: 2\n")
    with pytest.raises(InputError, match=r"drift_alarm_p.*\[0, 1\]") as err:
        load_policy(bad)
    assert "bad.yaml" in str(err.value)
    with pytest.raises(InputError, match="drift_alarm_p"):
        run_monitor(*_store_and_probes(tmp_path), drift_alarm_p=1.5)


def _store_and_probes(tmp_path: Path) -> tuple[LanceStore, ProbeSet]:
    store, data = small_store(tmp_path / "s2", indexed=False, n=200)
    return store, ProbeSet("p", "1", vectors=data.queries)


def test_a_threshold_under_the_default_p_value_floor_can_fire(tmp_path: Path) -> None:
    """200 permutations cannot give a p-value under 1/201 ≈ 0.005: a policy asking for 0.004
    once could never alarm. The test now shuffles enough for the threshold (2,499 times)."""
    store, data = small_store(tmp_path / "s")
    rng = np.random.default_rng(0)
    _add(store, data.base[:300] + 1.0 + 0.5 * rng.normal(size=(300, 16)))
    report = run_monitor(store, ProbeSet("p", "1", vectors=data.queries), k=10, floor=0.0,
                         drift_alarm_p=0.004)
    assert report.drift is not None and report.drift.test is not None
    test = report.drift.test
    assert test.permutations == permutations_for(0.004) == 2499
    assert test.p_value == 1 / 2500  # no shuffle reaches the shifted rows' MMD²
    (alarm,) = [a for a in report.alarms if a.startswith("data drift")]
    assert (f"(two-sample test p-value 0.0004 < 0.004: MMD² {test.mmd2:.4g}, 2,499 "
            "permutations, 1,000 trained and 300 new rows; a false alarm at most 0.4% of the time "
            "when nothing drifted)") in alarm
    assert not any(n.startswith("drift: drift_alarm_p") for n in report.notes)


def test_permutations_follow_the_threshold_within_bounds() -> None:
    assert permutations_for(None) == permutations_for(0.05) == PERMUTATIONS == 200
    assert permutations_for(0.01) == 999  # the smallest p-value a tenth of the threshold
    assert permutations_for(1e-6) == MAX_PERMUTATIONS == 20_000
    assert out_of_reach(0.01, 999) is None
    assert out_of_reach(1e-6, 20_000) == (
        "drift_alarm_p 1e-06 is under the smallest p-value 20,000 permutations can give "
        "(5e-05): the drift alarm cannot fire; set drift_alarm_p to at least 5e-05")
