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
