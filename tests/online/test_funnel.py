"""The offline-to-online funnel on simulated A/B logs whose truth is known: a change that
improved the ranking offline and truly improves it for users agrees; the same offline gain with
two identical rankers online is the test-set mirage (disagreed); on both history backends, from
the Python API and the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import UsageError
from recallwatch.history import History, record_gate_run
from recallwatch.history.funnel import agreement, offline_delta, resolve_change
from recallwatch.online import ABConfig, ABReadout, aggregate_units, readout
from recallwatch.online.funnel import attach_readout
from recallwatch.online.log import parse_line
from recallwatch.online.simulate import make_collection, simulate_ab_log
from tests.history.conftest import new_history
from tests.history.helpers import gate_run, golden_set

__all__ = ["new_history"]  # the two-backend fixture, shared

COL = make_collection(200, 20, seed=3)
GOOD, POOR = COL.ranking(0.3, 1), COL.ranking(3.0, 2)


def ab_log(path: Path, a: np.ndarray, b: np.ndarray, users: int, seed: int = 0) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for rec in simulate_ab_log(COL, a, b, users, seed=seed):
            f.write(json.dumps(rec) + "\n")
    return path


def read(path: Path) -> ABReadout:
    config = ABConfig(metrics=("ctr", "abandonment"))
    impressions = (parse_line(line, line=i) for i, line in
                   enumerate(path.read_text(encoding="utf-8").splitlines(), start=1))
    return readout(aggregate_units(impressions, unit="user", metrics=config.metrics), config)


def two_runs(location: str) -> tuple[str, str]:
    """A worse run (two queries lose an expected chunk) then the change that fixes it."""
    g = golden_set(6)
    before = record_gate_run(gate_run(g, {"q00": {"q00_b": 15}, "q01": {"q01_b": 18}}), location)
    after = record_gate_run(gate_run(g), location)
    return before.run_id, after.run_id


@pytest.mark.parametrize(("offline", "online", "status"), [
    (0.1, "better", "agreed"), (-0.1, "worse", "agreed"), (0.0, "no difference", "agreed"),
    (0.1, "no difference", "disagreed"), (0.1, "worse", "disagreed"),
    (-0.1, "better", "disagreed"), (0.0, "better", "disagreed"),
    (0.1, "inconclusive", "undecided"), (None, "better", "undecided"),
])
def test_agreement_table(offline: float | None, online: str, status: str) -> None:
    assert agreement(offline, online)[0] == status
    if offline == 0.1 and online != "better" and status == "disagreed":
        assert "test-set mirage" in agreement(offline, online)[1]


def test_offline_delta_is_against_the_gates_baseline(new_history: Callable[[], str]) -> None:
    location = new_history()
    before, after = two_runs(location)
    with History(location) as h:
        d = offline_delta(h, after, "recall")
        assert d.baseline == before
        runs = {r.run_id: r for r in h.runs()}
        assert d.delta == pytest.approx(runs[after].mean_recall - runs[before].mean_recall)
        assert d.delta is not None and d.delta > 0
        assert offline_delta(h, before).delta is None  # the first run: no baseline
        with pytest.raises(UsageError, match="unknown offline metric"):
            offline_delta(h, after, "f1")


@pytest.mark.slow
def test_real_gain_agrees_and_mirage_disagrees(new_history: Callable[[], str],
                                               tmp_path: Path) -> None:
    location = new_history()
    _, after = two_runs(location)
    real = read(ab_log(tmp_path / "real.jsonl", POOR, GOOD, 3000))
    mirage = read(ab_log(tmp_path / "mirage.jsonl", GOOD, GOOD, 3000, seed=1))
    with History(location) as h:
        row = attach_readout(h, after, real)
        assert (row.online_metric, row.online_verdict, row.agreement) == ("ctr", "better",
                                                                          "agreed")
        assert row.offline_delta is not None and row.offline_delta > 0
        row2 = attach_readout(h, "latest", mirage)
        assert row2.online_verdict == "no difference", row2.payload["readout"]["reasons"]
        assert row2.agreement == "disagreed" and "mirage" in row2.payload["reading"]
        # abandonment moves less per user: 3,000 users cannot tell yet
        row3 = attach_readout(h, "latest", mirage, metric="abandonment")
        assert (row3.online_verdict, row3.agreement) == ("inconclusive", "undecided")
        stored = h.online_readouts()
        assert [r.id for r in stored] == [row3.id, row2.id, row.id]
        assert stored[2] == row


def test_promotion_is_a_change(tmp_path: Path) -> None:
    location = str(tmp_path / "h.db")
    _, after = two_runs(location)
    with History(location) as h:
        done = h.record_monitor_run("promote", {"accepted_run": after, "promoted": True},
                                    status="promoted")
        refused = h.record_monitor_run("promote", {"accepted_run": None, "promoted": False},
                                       status="refused")
        assert resolve_change(h, f"promote:{done}") == (after, done)
        with pytest.raises(UsageError, match="did not promote anything"):
            resolve_change(h, f"promote:{refused}")
        with pytest.raises(UsageError, match="no promote record 99"):
            resolve_change(h, "promote:99")


def test_the_commands(tmp_path: Path) -> None:
    location = str(tmp_path / "h.db")
    _, after = two_runs(location)
    log = ab_log(tmp_path / "real.jsonl", POOR, GOOD, 1500)
    runner = CliRunner()
    r = runner.invoke(app, ["online", "ab", str(log), "--history", location, "--change",
                            after[:-2]])
    assert r.exit_code == 0, r.output
    funnel_line = r.stdout.splitlines()[-1]
    assert funnel_line.startswith(f"FUNNEL: change {after}: offline ndcg +")
    assert "(better): AGREED — offline gain confirmed online" in funnel_line
    r = runner.invoke(app, ["history", "funnel", "--history", location, "--format", "json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["change_run"] == after and row["agreement"] == "agreed"
    assert row["payload"]["log"]["sha256"]
    r = runner.invoke(app, ["history", "funnel", "--history", location])
    assert r.stdout.startswith("1 change(s) read out online: 1 agreed, 0 disagreed")
    for bad, message in ((["--change", after], "--history and --change go together"),
                         (["--history", location, "--change", "nope"], "no run 'nope'"),
                         (["--history", location, "--change", after, "--offline-metric", "f1"],
                          "unknown --offline-metric")):
        r = runner.invoke(app, ["online", "ab", str(log), *bad])
        assert r.exit_code == 2 and message in r.output, r.output
    with History(location) as h:
        assert len(h.online_readouts()) == 1  # nothing half-written by the refusals
