"""A history for the monitor page: two stores, each with monitor runs over days (recall,
latency, coverage, drift with its test, the thresholds applied), a promotion on one, real
traffic on one, and a gate run on each; plus records that name no store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from recallwatch.history import History, record_gate_run
from recallwatch.ops.live_signals import LivePolicy, check_live
from tests.report import helpers as H

STORES = ("lancedb://./kb?table=chunks", "postgresql://search@db:5432/kb?table=chunks")
DAYS = 6
DRIFT_ALARM_P = 0.01


def drift(day: int, store: int) -> dict[str, Any]:
    """A drift record as the monitor writes it (``DriftSignal.to_dict()``), the shift growing
    with the days on the first store only."""
    shift = 0.02 * day if store == 0 else 0.001
    return {"trained_version": "3", "new_rows": 100 * day, "trained_rows": 2000,
            "mean_cosine_distance": shift, "share_far": 0.05 + shift, "baseline_share_far": 0.05,
            "centroids": "engine (16)", "sampled": 2000,
            "test": {"mmd2": shift / 10, "p_value": max(0.005, 0.6 - 0.12 * day) if store == 0
                     else 0.5, "permutations": 200, "reference_rows": 1000,
                     "current_rows": 100 * day, "max_rows": 1000, "ks_share_drifted": 0.1,
                     "psi_share_drifted": 0.05, "ks_worst": [], "psi_worst": []}}


def monitor_payload(day: int, store: int, *, live: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "store": STORES[store], "index_version": "3", "k": 10, "floor": 0.95,
        "recall": 0.99 - 0.01 * day * (store == 0), "recall_min": 0.8,
        "probes_below_floor": day, "latency_ms": {"p50": 2.0 + day, "p99": 8.0 + 2 * day,
                                                  "mean": 3.0},
        "coverage": 0.9 - 0.02 * day, "threshold": 0.41, "index_age_seconds": 86400.0 * day,
        "drift": drift(day, store), "alarm": False, "alarms": [],
        "resources": {"rows": 2000 + 100 * day, "dimensions": 16,
                      "vector_bytes": (2000 + 100 * day) * 64, "index_bytes": 50_000},
        "thresholds": {"floor": 0.95, "min_coverage": 0.5, "max_latency_p99_ms": 50.0,
                       "drift_alarm_p": DRIFT_ALARM_P},
    }
    if live:
        payload["live"] = check_live(
            {"window": {"start": None, "end": None}, "impressions": 5000,
             "no_result_rate": 0.02 + 0.01 * day, "ctr": 0.4 - 0.02 * day, "abandonment": 0.4,
             "latency_ms": {"p50": 30.0, "p95": 60.0, "p99": 100.0 + 50 * day},
             "latency_count": 5000}, LivePolicy()).to_dict()
    return payload


def build(db: Path) -> None:
    g = H.golden_set()
    for store, uri in enumerate(STORES):
        record_gate_run(replace(H.gate_run(g, depth=2 * store),
                                store={"uri": uri, "version": "3", "count": 2000}), db)
    with History(db) as h:
        for day in range(DAYS):
            for store, uri in enumerate(STORES):
                h.record_monitor_run("monitor", monitor_payload(day, store, live=store == 0),
                                     store_uri=uri, index_version="3", status="ok",
                                     created_at=f"2026-11-{10 + day:02d}T0{store}:00:00+00:00")
        h.record_monitor_run("promote", {"version": "3"}, store_uri=STORES[1],
                             index_version="3", status="promoted",
                             created_at="2026-11-12T12:00:00+00:00")
        h.record_monitor_run("load", {"qps": 900.0, "memory_mb": 512.0},
                             created_at="2026-11-12T13:00:00+00:00")
