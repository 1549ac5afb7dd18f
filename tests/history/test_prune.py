"""``history prune``: the window (last N runs, last N days), what is always kept (baselines,
production, funnel), what goes (the runs and their query rows), bytes and space reclaimed, dry
runs and bad values — on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.acceptance.model import GateResult
from recallwatch.cli import app
from recallwatch.errors import UsageError
from recallwatch.history import History, prune_history
from recallwatch.history._store import RunSummary
from tests.history.helpers import gate_run, golden_set, raw_backend

runner = CliRunner()


def _fill(location: str) -> list[GateResult]:
    """Eleven runs, oldest first: two datasets, ACCEPTs and STOPs, one promotion allowed by an
    old ACCEPT, one funnel row on two old runs."""
    kb, other = golden_set(6), golden_set(4, name="other")
    stop = {"q01": {"q01_b": 14}}
    runs = [gate_run(kb), gate_run(kb, stop), gate_run(other), gate_run(kb), gate_run(kb, stop),
            gate_run(other, {"q00": {"q00_a": 30}}), gate_run(kb, stop), gate_run(kb),
            gate_run(kb, stop), gate_run(kb, stop), gate_run(kb, stop)]
    with History(location) as h:
        for r in runs:
            h.record(r)
        h.record_monitor_run("promote", {"promoted": True, "accepted_run": runs[0].run_id})
        h.record_monitor_run("promote", {"promoted": False, "accepted_run": runs[1].run_id})
        h.record_online_readout({
            "change_run": runs[3].run_id, "promote_id": None, "offline_metric": "ndcg",
            "offline_baseline": runs[2].run_id, "offline_delta": 0.1, "online_metric": "ctr",
            "online_delta": 0.0, "online_ci_low": None, "online_ci_high": None,
            "online_verdict": "no difference", "agreement": "undecided", "payload": {}})
    return runs


def _pointed_at(runs: list[GateResult]) -> set[str]:
    """What must survive any window, worked out from the runs themselves (newest wins)."""
    keep = {runs[0].run_id, runs[3].run_id, runs[2].run_id}  # promoted, funnel change, baseline
    last_of: dict[str, str] = {}
    last_accept: dict[tuple[str, str], str] = {}
    for r in runs:
        last_of[r.dataset["name"]] = r.run_id
        if r.verdict == "ACCEPT":
            last_accept[(r.dataset_hash, r.policy_hash)] = r.run_id
    return keep | set(last_of.values()) | set(last_accept.values())


def _stored(location: str) -> tuple[list[str], set[str]]:
    with raw_backend(location) as db:
        runs = [str(r[0]) for r in db.execute("SELECT run_id FROM runs ORDER BY seq")]
        queries = {str(r[0]) for r in db.execute("SELECT DISTINCT run_id FROM query_results")}
    return runs, queries


def test_keep_last_removes_the_rest_but_every_run_pointed_at(history_at: str) -> None:
    runs = _fill(history_at)
    assert {r.verdict for r in runs} == {"ACCEPT", "STOP"}
    expected = [r.run_id for i, r in enumerate(runs)
                if i >= len(runs) - 3 or r.run_id in _pointed_at(runs)]
    with History(history_at) as h:
        report = prune_history(h, keep_last=3)
    kept, with_queries = _stored(history_at)
    assert kept == expected
    assert with_queries == set(expected)  # the query rows went with their runs
    assert [r.run_id for r in report.removed] == [
        r.run_id for r in reversed(runs) if r.run_id not in expected]
    assert report.protected == len(expected) - 3 and report.runs_before == len(runs)
    assert report.bytes_removed > 0
    if report.backend == "sqlite":
        assert report.size_after < report.size_before
        assert Path(history_at).stat().st_size == report.size_after  # VACUUMed, checkpointed
    with History(history_at) as h:  # what survives still loads, and compares
        assert h.integrity_check() == "ok"
        assert h.load(runs[0].run_id).run_id == runs[0].run_id
        assert [m.payload["accepted_run"] for m in h.monitor_runs(kind="promote")][-1] == \
            runs[0].run_id


def test_keep_days_keeps_the_window_and_a_dry_run_removes_nothing(history_at: str) -> None:
    runs = _fill(history_at)
    later = datetime.fromisoformat(runs[-1].created_at).astimezone(UTC) + timedelta(days=40)
    with History(history_at) as h:
        dry = prune_history(h, keep_days=30, dry_run=True, now=later)
        assert [r.run_id for r in h.runs()][::-1] == [r.run_id for r in runs]
        assert dry.size_after == dry.size_before
        kept_all = prune_history(h, keep_days=41, now=later)
        assert kept_all.removed == []
        done = prune_history(h, keep_days=30, now=later)
    assert [r.run_id for r in done.removed] == [r.run_id for r in dry.removed]
    assert _stored(history_at)[0] == [r.run_id for r in runs if r.run_id in _pointed_at(runs)]
    assert isinstance(done.removed[0], RunSummary)


@pytest.mark.parametrize(("kwargs", "found"), [
    ({"keep_last": -1}, "found -1"), ({"keep_days": -2}, "found -2"),
    ({"keep_last": 1.5}, "found 1.5"), ({}, "say what to keep")])
def test_bad_values_are_refused(tmp_path: Path, kwargs: dict[str, object], found: str) -> None:
    with History(tmp_path / "h.db") as h, pytest.raises(UsageError, match=found):
        prune_history(h, **kwargs)  # type: ignore[arg-type]


def test_the_command_lists_removes_and_refuses(tmp_path: Path) -> None:
    location = str(tmp_path / "h.db")
    runs = _fill(location)
    base = ["history", "prune", "--history", location]
    dry = runner.invoke(app, [*base, "--keep-last", "2", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    gone = [r.run_id for r in runs[:-2] if r.run_id not in _pointed_at(runs)]
    assert f"would remove {len(gone)} of {len(runs)} run(s)" in dry.stdout
    assert all(run_id in dry.stdout for run_id in gone)
    done = runner.invoke(app, [*base, "--keep-last", "2", "--format", "json"])
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert sorted(r["run_id"] for r in out["removed"]) == sorted(gone)
    assert out["runs_after"] == len(runs) - len(gone) and out["bytes_removed"] > 0
    refusals = ((["--keep-last", "-3"], "--keep-last takes a whole number of 0 or more, found -3"),
                (["--keep-days", "soon"], "'--keep-days'"), ([], "say what to keep"))
    for bad, words in refusals:
        refused = runner.invoke(app, [*base, *bad])
        assert refused.exit_code == 2, refused.output
        assert words in refused.output
    missing = runner.invoke(app, ["history", "prune", "--history", str(tmp_path / "no.db"),
                                  "--keep-last", "1"])
    assert missing.exit_code == 2 and "no run history" in missing.output


def test_a_dry_run_on_a_history_not_created_yet_has_nothing_to_prune(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default history, .recallwatch/history.db, is not there
    dry = runner.invoke(app, ["history", "prune", "--keep-last", "200", "--dry-run"])
    assert (dry.exit_code, dry.stdout) == (0, ".recallwatch/history.db: no run history there "
                                              "yet, so nothing to prune (the gate creates it "
                                              "when it records its first run)\n")
    as_json = runner.invoke(app, ["history", "prune", "--keep-days", "7", "--dry-run",
                                  "--format", "json"])
    out = json.loads(as_json.stdout)
    assert as_json.exit_code == 0 and out["exists"] is False
    assert (out["runs_before"], out["removed"], out["runs_after"]) == (0, [], 0)
    assert not (tmp_path / ".recallwatch").exists()  # a dry run creates nothing
    # the window is checked all the same; a real prune still needs the history
    bad = runner.invoke(app, ["history", "prune", "--keep-days", "-1", "--dry-run"])
    assert bad.exit_code == 2 and "--keep-days takes a whole number of 0 or more" in bad.stderr
    real = runner.invoke(app, ["history", "prune", "--keep-last", "200"])
    assert real.exit_code == 2 and "no run history at .recallwatch/history.db" in real.stderr


def test_a_window_longer_than_all_recorded_time_keeps_every_run(tmp_path: Path) -> None:
    location = str(tmp_path / "h.db")
    runs = _fill(location)
    with History(location) as h:
        report = prune_history(h, keep_days=999_999)
    assert report.removed == [] and report.runs_before == len(runs)
