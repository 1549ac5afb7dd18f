"""Live signals in the monitor: a simulated log whose traffic is known (how many searches show
nothing, the users' click model, the latency distribution) held to thresholds, on a small real
LanceDB index; alarms exit 1, go to the webhook, are recorded and spend the error budget."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import InputError, UsageError
from recallwatch.history import History
from recallwatch.online import InteractionLog
from recallwatch.online.live import parse_window, window_and_baseline, window_signals
from recallwatch.online.simulate import make_collection, simulate_ab_log
from recallwatch.ops.budget import BudgetPolicy, BudgetStatus, error_budget
from recallwatch.ops.live_signals import LivePolicy, check_live, live_breached
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.stats import wilson_interval
from tests.ops.test_monitor import server, small_store

__all__ = ["server"]  # the webhook fixture, shared

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def traffic(n_users: int, *, empty_every: int = 0, slow_ms: float | None = None,
            seed: int = 0, start: datetime = T0) -> Iterator[dict[str, Any]]:
    """Simulated searches (cascade users, log-normal latency around 40 ms), of which every
    ``empty_every``-th shows nothing; ``slow_ms`` replaces every latency."""
    col = make_collection(50, 20, seed=seed)
    ranking = col.ranking(0.5, seed)
    for i, rec in enumerate(simulate_ab_log(col, ranking, ranking, n_users, seed=seed,
                                            start=start)):
        if empty_every and i % empty_every == 0:
            rec = {**rec, "shown": [], "clicks": [], "conversion": False}
        if slow_ms is not None:
            rec = {**rec, "latency_ms": slow_ms}
        yield rec


def write_log(path: Path, records: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = list(records)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return rows


def by_hand(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    return {"no_result_rate": sum(not r["shown"] for r in rows) / n,
            "ctr": sum(len({c["id"] for c in r["clicks"]}) for r in rows) / n,
            "abandonment": sum(not r["clicks"] for r in rows) / n,
            "p99": float(np.percentile([r["latency_ms"] for r in rows], 99))}


def test_window_is_the_last_stretch_of_the_log(tmp_path: Path) -> None:
    rows = write_log(tmp_path / "log.jsonl.gz", traffic(300, empty_every=4))
    def ts(r: dict[str, Any]) -> datetime:
        return datetime.fromisoformat(r["ts"].replace("Z", "+00:00"))

    newest = max(ts(r) for r in rows)
    inside = [r for r in rows if ts(r) > newest - timedelta(hours=2)]
    assert 0 < len(inside) < len(rows)
    s = window_signals(InteractionLog(tmp_path / "log.jsonl.gz"), parse_window("2h"))
    expect = by_hand(inside)
    assert s.impressions == len(inside)
    assert s.no_result_rate == pytest.approx(expect["no_result_rate"])
    assert s.ctr == pytest.approx(expect["ctr"])
    assert s.abandonment == pytest.approx(expect["abandonment"])
    assert s.latency_ms is not None and s.latency_ms["p99"] == pytest.approx(expect["p99"])
    assert s.latency_ci_ms is not None and s.latency_ci_ms["p50"] is not None
    low, high = s.latency_ci_ms["p50"]
    assert low <= s.latency_ms["p50"] <= high
    assert (s.latency_ci_ms["p99"] is None) == (len(inside) < 368)  # a p99 interval needs 368
    assert s.latency_p99_low_ms is not None and s.latency_p99_low_ms <= s.latency_ms["p99"]
    whole = window_signals(InteractionLog(tmp_path / "log.jsonl.gz"))
    assert whole.impressions == len(rows)


@pytest.mark.parametrize("text", ["", "h", "0h", "-2d", "3w", "1.5"])
def test_bad_windows(text: str) -> None:
    with pytest.raises(UsageError, match="a window is a positive number of minutes"):
        parse_window(text)


def test_thresholds_alarm_only_on_a_breach() -> None:
    base = {"impressions": 1000, "no_result_rate": 0.02, "ctr": 0.4, "abandonment": 0.5,
            "latency_ms": {"p50": 40.0, "p95": 80.0, "p99": 120.0}, "window": {},
            "latency_count": 1000, "latency_ci_ms": {"p50": [39.0, 41.0], "p99": [110.0, 130.0]}}
    assert check_live(base).alarms == ()
    bad = check_live({**base, "no_result_rate": 0.40, "ctr": 0.01,
                      "latency_ms": {"p99": 2500.0},
                      "latency_ci_ms": {"p50": [39.0, 41.0], "p99": [2300.0, 2700.0]}})
    (nr_low, ctr_low), (nr_high, ctr_high) = wilson_interval([400, 10], [1000, 1000])
    assert bad.alarms == (
        f"live no-result rate is 0.4, above the maximum 0.3 (95 % interval {nr_low:.4g}–"
        f"{nr_high:.4g} over 1,000 impressions)",
        f"live click-through rate is 0.01, under the minimum 0.05 (95 % interval {ctr_low:.4g}–"
        f"{ctr_high:.4g} over 1,000 impressions)",
        "live latency p99 is 2500 ms, above the maximum 2000 ms (95 % interval 2300–2700 ms "
        "over 1,000 logged latencies)")
    off = check_live({**base, "ctr": 0.01}, LivePolicy(min_ctr=None))
    assert off.alarms == ()
    few = check_live({**base, "impressions": 20, "ctr": 0.0})
    assert few.alarms == () and "only 20 impressions" in few.notes[0]
    assert "no impression in the window" in check_live({**base, "impressions": 0}).alarms[0]
    assert live_breached({"live": bad.to_dict()}) and not live_breached({"live": None})


def test_a_rate_past_its_threshold_within_its_interval_is_noise() -> None:
    """0.31 of 1,000 searches found nothing: the maximum 0.3 is inside the rate's interval, so
    the window may well be at 0.28 (one window in ten of such traffic reads 0.31 or more)."""
    base = {"impressions": 1000, "no_result_rate": 0.31, "ctr": 0.4, "abandonment": 0.5,
            "ctr_sd": 0.6, "window": {}, "latency_ms": {"p50": 40.0, "p99": 2100.0},
            "latency_count": 300, "latency_ci_ms": {"p50": [38.0, 43.0], "p99": None}}
    check = check_live(base)
    assert check.alarms == ()
    (low,), (high,) = wilson_interval([310], [1000])
    assert check.notes == (
        f"live no-result rate is 0.31, above the maximum 0.3, but its 95 % interval "
        f"{low:.4g}–{high:.4g} over 1,000 impressions reaches below it: within noise, not an "
        "alarm",
        "live latency p99 is 2100 ms, above the maximum 2000 ms, from 300 logged latencies: no "
        "interval stated: not judged, not an alarm")
    # the click-through rate's interval comes from the clicks' spread (0.6 per impression)
    low_ctr = check_live({**base, "no_result_rate": 0.0, "ctr": 0.04})
    half = 1.959963984540054 * 0.6 / np.sqrt(1000)
    assert low_ctr.notes[0] == (
        f"live click-through rate is 0.04, under the minimum 0.05, but its 95 % interval "
        f"{0.04 - half:.4g}–{0.04 + half:.4g} over 1,000 impressions reaches above it: within "
        "noise, not an alarm")
    # the p99's low end alone, from 300 latencies: over the maximum, an alarm; under, not judged
    slow = check_live({**base, "no_result_rate": 0.0, "latency_p99_low_ms": 2050.0})
    assert slow.alarms == (
        "live latency p99 is 2100 ms, above the maximum 2000 ms (the low end of its 95 % "
        "interval, 2050 ms over 300 logged latencies, is above it; the high end needs 368)",)
    unsure = check_live({**base, "no_result_rate": 0.0, "latency_p99_low_ms": 1800.0})
    assert unsure.alarms == () and unsure.notes[-1] == (
        "live latency p99 is 2100 ms, above the maximum 2000 ms, from 300 logged latencies: the "
        "low end of its 95 % interval, 1800 ms, is not above the maximum, and the high end needs "
        "368: not judged, not an alarm")


@pytest.mark.parametrize("field,value", [("max_no_result_rate", 1.5), ("min_ctr", -1.0),
                                         ("max_latency_p99_ms", 0.0), ("min_impressions", 0),
                                         ("max_abandonment", float("nan"))])
def test_bad_thresholds(field: str, value: float) -> None:
    with pytest.raises(InputError, match=field):
        LivePolicy(**{field: value})


def test_a_live_breach_spends_the_budget_though_recall_is_fine() -> None:
    policy = BudgetPolicy(target=0.9, slo=0.9, window_runs=10)
    runs = [(T0 + timedelta(days=i), 0.95, i >= 8) for i in range(10)]
    status = error_budget(runs, policy)
    assert (status.bad, status.live_bad) == (2, 2)
    assert status.consumed == pytest.approx(2.0)  # 2 bad, 10 % of 10 runs = 1 allowed
    assert "2 for live traffic past a threshold" in status.summary()
    assert BudgetStatus.from_dict(status.to_dict()) == status
    old = status.to_dict()
    del old["live_bad"]  # a record written before live signals existed
    assert BudgetStatus.from_dict(old).live_bad == 0


def test_monitor_with_a_healthy_and_a_broken_log(tmp_path: Path,
                                                 server: tuple[str, list[dict[str, Any]]]) -> None:
    store, data = small_store(tmp_path / "s", indexed=False, n=300)
    np.save(tmp_path / "p.npy", data.queries)
    healthy = write_log(tmp_path / "ok.jsonl", traffic(200))
    write_log(tmp_path / "bad.jsonl", traffic(200, empty_every=2, slow_ms=3000.0, seed=1))
    db = str(tmp_path / "h.db")
    args = ["ops", "monitor", "--store", store.uri, "--probes", str(tmp_path / "p.npy"),
            "--floor", "0.9", "--history", db, "--budget-window", "2"]
    ok = CliRunner().invoke(app, [*args, "--log", str(tmp_path / "ok.jsonl"), "--window", "all"])
    assert ok.exit_code == 0, ok.output
    expect = by_hand(healthy)
    assert f"    click-through rate   {expect['ctr']:.4g}" in ok.stdout
    assert "(min 0.05)" in ok.stdout and "(max 2000 ms)" in ok.stdout
    # 200 logged latencies are too few for a p99's interval: the table states none, and why
    url, received = server
    bad = CliRunner().invoke(app, [*args, "--log", str(tmp_path / "bad.jsonl"), "--webhook",
                                   url, "--max-latency-p99", "500", "--format", "json",
                                   "--window", "all"])
    assert bad.exit_code == 1, bad.output
    report = json.loads(bad.stdout)
    alarms = [a for a in report["alarms"] if a.startswith("live ")]
    assert [a.split(" is ")[0] for a in alarms] == ["live no-result rate", "live latency p99"]
    assert report["live"]["thresholds"]["max_latency_p99_ms"] == 500.0
    assert report["budget"]["bad"] == 1 and report["budget"]["live_bad"] == 1
    assert received[0]["json"]["event"] == "recallwatch.monitor.alarm"
    assert received[0]["json"]["live"]["alarms"] == alarms
    with History(db) as h:
        recorded = [m.payload for m in reversed(h.monitor_runs(kind="monitor"))]
    assert recorded[0]["live"]["alarms"] == [] and recorded[1]["live"]["alarms"] == alarms
    assert recorded[1]["live"]["log"]["sha256"] and recorded[1]["live"]["impressions"] > 0


def test_a_p99_of_too_few_logged_latencies_is_not_stated(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False, n=300)
    np.save(tmp_path / "p.npy", data.queries)
    log = traffic(100)
    write_log(tmp_path / "few.jsonl", log)
    latencies = sum(1 for line in (tmp_path / "few.jsonl").read_text().splitlines()
                    if json.loads(line).get("latency_ms") is not None)
    assert 100 <= latencies < 368
    out = CliRunner().invoke(app, ["ops", "monitor", "--store", store.uri, "--probes",
                                   str(tmp_path / "p.npy"), "--floor", "0.5", "--no-history",
                                   "--log", str(tmp_path / "few.jsonl"), "--window", "all"])
    assert out.exit_code == 0, out.output
    assert "    latency p99          not stated   (max 2000 ms)" in out.stdout
    assert (f"    (latency p99 not stated: {latencies:,} logged latencies, 368 needed for its 95 "
            "% interval)") in out.stdout


def test_python_api(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False, n=300)
    write_log(tmp_path / "log.jsonl", traffic(200, empty_every=2))
    log = InteractionLog(tmp_path / "log.jsonl")
    live = check_live({**window_signals(log).to_dict(), "log": log.summary.to_dict()})
    report = run_monitor(store, ProbeSet("p", "1", vectors=data.queries), floor=0.5, live=live)
    assert report.alarm and report.alarms == live.alarms
    assert report.to_dict()["live"]["no_result_rate"] == pytest.approx(0.5, abs=0.01)


def test_live_options_need_a_log_and_a_bad_log_is_one_line(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False, n=300)
    np.save(tmp_path / "p.npy", data.queries)
    args = ["ops", "monitor", "--store", store.uri, "--probes", str(tmp_path / "p.npy"),
            "--no-history"]
    out = CliRunner().invoke(app, [*args, "--window", "1h"])
    assert out.exit_code == 2 and "need --log" in out.output
    (tmp_path / "bad.jsonl").write_text('{"query_id": "q", "shown": [], "clicks": []}\n'
                                        '{"query_id": "q2", "shown": "x"}\n', encoding="utf-8")
    out = CliRunner().invoke(app, [*args, "--log", str(tmp_path / "bad.jsonl")])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert out.output.count("\n") == 1 and "bad.jsonl:2" in out.output
    out = CliRunner().invoke(app, [*args, "--log", str(tmp_path / "bad.jsonl"), "--window", "1d"])
    assert out.exit_code == 2 and "bad.jsonl:1" in out.output and "timestamp" in out.output


def drop_log(path: Path, n: int = 2000, before: float = 0.5, after: float = 0.25,
             seed: int = 0) -> Path:
    """One search every 10 s; the chance of a click falls from ``before`` to ``after`` half-way."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        p = before if i < n // 2 else after
        clicks = [{"id": "d1"}] if rng.random() < p else []
        rows.append({"query_id": f"q{i % 50}", "ts": (T0 + timedelta(seconds=10 * i)).isoformat(),
                     "shown": [{"id": "d1"}, {"id": "d2"}], "clicks": clicks,
                     "latency_ms": 40.0})
    write_log(path, iter(rows))
    return path


def test_a_ctr_drop_half_way_alarms_against_the_baseline(tmp_path: Path) -> None:
    log = InteractionLog(drop_log(tmp_path / "drop.jsonl"))
    now, before = window_and_baseline(log)  # default: the newer half of a short log
    assert before is not None and now.impressions == before.impressions == 1000
    assert now.ctr == pytest.approx(0.25, abs=0.04) and before.ctr == pytest.approx(0.5, abs=0.04)
    check = check_live(now.to_dict(), LivePolicy(), before.to_dict())
    assert check.alarms and check.alarms[0].startswith("live click-through rate went from 0.")
    assert "against the baseline" in check.alarms[0]
    # the absolute minimum (0.05) alone never sees it; the whole log dilutes it
    assert check_live(now.to_dict(), LivePolicy(max_relative_change=None)).alarms == ()
    # no drop, no alarm
    steady = InteractionLog(drop_log(tmp_path / "steady.jsonl", after=0.5, seed=1))
    now, before = window_and_baseline(steady)
    assert before is not None
    assert check_live(now.to_dict(), LivePolicy(), before.to_dict()).alarms == ()


def test_monitor_alarms_on_a_drop_by_default(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False, n=300)
    np.save(tmp_path / "p.npy", data.queries)
    drop_log(tmp_path / "drop.jsonl")
    args = ["ops", "monitor", "--store", store.uri, "--probes", str(tmp_path / "p.npy"),
            "--floor", "0.5", "--no-history", "--log", str(tmp_path / "drop.jsonl")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output
    assert "live click-through rate went from 0." in r.stdout
    assert "baseline           1,000 impressions" in r.stdout
    r = CliRunner().invoke(app, [*args, "--max-drop", "0"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, [*args, "--window", "all"])
    assert r.exit_code == 0 and "no baseline" in r.stdout
