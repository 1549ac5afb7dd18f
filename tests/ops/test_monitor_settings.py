"""The monitor's settings as typed groups (``MonitorSettings``: the depth, ``AlarmThresholds``,
``ReindexSettings``): the group form and the keyword form of ``run_monitor`` are one run, a
keyword replaces the group's value, a threshold out of range names its parameter, and an unknown
keyword is refused as Python refuses one."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from recallwatch.errors import InputError, UsageError
from recallwatch.ops.monitor import (
    AlarmThresholds,
    MonitorSettings,
    ReindexSettings,
    monitor_settings,
    run_monitor,
)
from recallwatch.ops.probes import ProbeSet
from tests.ops.test_monitor import small_store

THRESHOLDS = ("floor", "min_coverage", "max_latency_p99_ms", "drift_alarm_p", "min_freshness")


def test_keywords_fill_the_groups_and_replace_their_values() -> None:
    settings = monitor_settings(k=5, floor=0.5, min_coverage=0.2, drift_alarm_p=0.01,
                                reindex_below=0.8, reindex_window=timedelta(hours=2),
                                max_recall_loss=None)
    assert settings == MonitorSettings(
        5, AlarmThresholds(floor=0.5, min_coverage=0.2, drift_alarm_p=0.01),
        ReindexSettings(below=0.8, window=timedelta(hours=2), max_recall_loss=None))
    base = MonitorSettings(k=7, thresholds=AlarmThresholds(floor=0.9, min_freshness=0.5))
    moved = monitor_settings(base, floor=0.3)
    assert moved.k == 7 and moved.thresholds == AlarmThresholds(floor=0.3, min_freshness=0.5)
    assert monitor_settings() == MonitorSettings()
    assert list(AlarmThresholds().to_dict()) == list(THRESHOLDS)  # the record's `thresholds`


def test_the_group_form_and_the_keyword_form_are_one_run(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False)
    probes = ProbeSet("p", "1", vectors=data.queries)
    grouped = run_monitor(store, probes, MonitorSettings(
        k=5, thresholds=AlarmThresholds(floor=0.99, min_coverage=0.1)))
    loose = run_monitor(store, probes, k=5, floor=0.99, min_coverage=0.1)
    for report in (grouped, loose):
        assert report.k == 5 and report.floor == 0.99 and report.thresholds == {
            "floor": 0.99, "min_coverage": 0.1, "max_latency_p99_ms": None,
            "drift_alarm_p": None, "min_freshness": None}
    assert grouped.recall == loose.recall and grouped.alarms == loose.alarms


@pytest.mark.parametrize(("settings", "field"), [
    (MonitorSettings(thresholds=AlarmThresholds(floor=1.5)), "floor"),
    (MonitorSettings(thresholds=AlarmThresholds(min_coverage=-0.1)), "min_coverage"),
    (MonitorSettings(thresholds=AlarmThresholds(max_latency_p99_ms=0.0)), "max_latency_p99_ms"),
    (MonitorSettings(reindex=ReindexSettings(below=2.0)), "reindex_below"),
    (MonitorSettings(k=0), "k"),
])
def test_a_setting_out_of_range_names_its_parameter(tmp_path: Path, settings: MonitorSettings,
                                                    field: str) -> None:
    store, data = small_store(tmp_path / "s", indexed=False, n=50)
    with pytest.raises(InputError, match=rf"^field '{field}': expected "):
        run_monitor(store, ProbeSet("p", "1", vectors=data.queries), settings)


def test_a_depth_reaching_every_row_and_an_unknown_keyword_are_refused(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False, n=50)
    probes = ProbeSet("p", "1", vectors=data.queries)
    with pytest.raises(UsageError, match=r"--k 50 reaches every row"):
        run_monitor(store, probes, MonitorSettings(k=50))
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\): flor"):
        run_monitor(store, probes, flor=0.5)  # type: ignore[call-arg]
