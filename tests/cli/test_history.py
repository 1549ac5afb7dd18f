"""`recallwatch history list | show | compare | trend`, fed by real gate runs through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.history import History

runner = CliRunner(env={"COLUMNS": "250"})

N = 20


def _golden(tmp_path: Path) -> Path:
    lines = ["name: kb", 'version: "1"', "queries:"]
    lines += [f"  - {{id: q{i:02d}, text: question {i}, expected: [q{i:02d}_a, q{i:02d}_b], "
              f"domain: {'legal' if i % 2 else 'rrhh'}}}" for i in range(N)]
    path = tmp_path / "golden.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "policy.yaml").write_text("noise_ceiling: 1.0\n", encoding="utf-8")
    return path


def _results(tmp_path: Path, name: str, lost: set[int]) -> Path:
    """Every query finds both expected chunks at ranks 1-2, except ``lost`` (second one at 15)."""
    out = []
    for i in range(N):
        ids = [f"q{i:02d}_a", f"q{i:02d}_b", *(f"x{i}_{j}" for j in range(18))]
        if i in lost:
            ids.insert(14, ids.pop(1))
        out.append(json.dumps({"query_id": f"q{i:02d}", "results": [
            {"id": c, "score": round(0.95 - 0.01 * r, 4)} for r, c in enumerate(ids)]}))
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _gate(tmp_path: Path, name: str, lost: set[int], *extra: str) -> object:
    return runner.invoke(app, ["gate", str(tmp_path / "golden.yaml"), "--results",
                               str(_results(tmp_path, name, lost)), "--policy",
                               str(tmp_path / "policy.yaml"), "--history",
                               str(tmp_path / "h.db"), *extra])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    _golden(tmp_path)
    assert _gate(tmp_path, "ok", set()).exit_code == 0
    assert _gate(tmp_path, "bad", {3, 8}).exit_code == 1
    return tmp_path / "h.db"


def test_the_gate_report_shows_both_baselines(tmp_path: Path, db: Path) -> None:
    r = _gate(tmp_path, "worse", {3, 8, 11})
    assert r.exit_code == 1
    with History(db) as h:
        ok, bad = h.runs()[2], h.runs()[1]
    assert f"vs previous run {bad.run_id}: mean quality 90.0 → 85.0" in r.output
    assert "1 newly failing, 0 newly passing, 2 still failing" in r.output
    assert f"vs last accepted {ok.run_id}: mean quality 100.0 → 85.0" in r.output
    assert f"q11 passed at run {bad.run_id} and fails now on recall" in r.output


def test_list_table_and_json(db: Path) -> None:
    r = runner.invoke(app, ["history", "list", "--history", str(db)])
    assert r.exit_code == 0, r.output
    with History(db) as h:
        runs = h.runs()
    assert f"2 run(s) in {db}" in r.output
    for run in runs:
        assert run.run_id in r.output
    assert r.output.index(runs[0].run_id) < r.output.index(runs[1].run_id)  # newest first
    r = runner.invoke(app, ["history", "list", "--history", str(db), "--format", "json"])
    out = json.loads(r.output)
    assert [x["run_id"] for x in out["runs"]] == [run.run_id for run in runs]
    assert out["runs"][0]["verdict"] == "STOP" and out["runs"][0]["failed_queries"] == 2
    r = runner.invoke(app, ["history", "list", "--history", str(db), "--dataset", "other",
                            "--format", "json"])
    assert json.loads(r.output) == {"runs": []}


def test_show_prints_the_stored_report(db: Path) -> None:
    with History(db) as h:
        latest = h.load(h.resolve("latest"))
    r = runner.invoke(app, ["history", "show", "latest", "--history", str(db), "--format",
                            "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out == json.loads(json.dumps(latest.to_dict()))
    assert out["comparison"]["last_accepted"]["newly_failing"] == ["q03", "q08"]
    r = runner.invoke(app, ["history", "show", "accepted", "--history", str(db)])
    assert r.exit_code == 0 and " ACCEPT " in r.output


def test_compare_two_runs(db: Path) -> None:
    with History(db) as h:
        new, old = (r.run_id for r in h.runs())
    r = runner.invoke(app, ["history", "compare", old[:-1], "latest", "--history", str(db),
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["a"], out["b"]) == (old, new)
    assert out["newly_failing"] == ["q03", "q08"] and out["comparable"]
    assert out["rank_changes"]["q03"] == {"q03_b": [2, 15]}
    assert set(out["deltas"]) >= {"quality", "recall", "rr", "ndcg"}
    r = runner.invoke(app, ["history", "compare", "previous", "latest", "--history", str(db)])
    assert r.exit_code == 0, r.output
    assert f"{new} vs {old}: mean quality 100.0 → 90.0 (−10.0, p=" in r.output
    assert "rank changes of expected chunks" in r.output and "q03_b" in r.output


def test_compare_three_runs_in_one_table(tmp_path: Path, db: Path) -> None:
    assert _gate(tmp_path, "worse", {3, 8, 11, 12, 13, 14, 15, 16, 17}).exit_code == 1
    with History(db) as h:
        worse, bad, ok = h.runs()
    r = runner.invoke(app, ["history", "compare", ok.run_id, bad.run_id, worse.run_id,
                            "--history", str(db), "--format", "json", "--all-pairs"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["runs"] == [ok.run_id, bad.run_id, worse.run_id]
    assert out["aggregate"][ok.run_id]["quality"] == 100.0
    assert out["aggregate"][worse.run_id]["quality"] == pytest.approx(55.0)
    assert {(t["a"], t["b"]) for t in out["tests"]} == {
        (ok.run_id, bad.run_id), (ok.run_id, worse.run_id), (bad.run_id, worse.run_id)}
    recall = next(t for t in out["tests"] if t["measure"] == "recall"
                  and t["b"] == worse.run_id and t["a"] == ok.run_id)
    assert (recall["wins"], recall["ties"], recall["losses"]) == (0, 11, 9)
    r = runner.invoke(app, ["history", "compare", ok.run_id, bad.run_id, worse.run_id,
                            "--history", str(db)])
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if line.startswith("a "))
    assert row.split()[1] == ok.run_id and row.split()[2].endswith("c")  # ok beats worse


def test_unknown_runs_and_missing_history_are_usage_errors(db: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["history", "show", "zzz", "--history", str(db)])
    assert r.exit_code == 2
    assert r.output.startswith(f"Error: no run 'zzz' in {db}")
    r = runner.invoke(app, ["history", "compare", "2", "latest", "--history", str(db)])
    assert r.exit_code == 2 and "Error: run prefix '2' is ambiguous" in r.output
    missing = tmp_path / "nope.db"
    r = runner.invoke(app, ["history", "list", "--history", str(missing)])
    assert r.exit_code == 2
    assert r.output == f"Error: no run history at {missing} (run the gate first, or name the " \
                       "file with --history)\n"
    assert not missing.exists()


def test_trend_names_slow_degradation_and_exits_1(tmp_path: Path) -> None:
    _golden(tmp_path)
    lost: set[int] = set()
    for step in range(7):
        _gate(tmp_path, f"run{step}", set(lost))
        lost.add(2 * step + 1)  # one more legal query lost per run
    db = tmp_path / "h.db"
    r = runner.invoke(app, ["history", "trend", "--history", str(db)])
    assert r.exit_code == 1, r.output
    assert "pattern slow_degradation: slow general degradation: mean quality 100.0 → 70.0" \
        in r.output
    assert "pattern domain_degradation: domain legal degrading" in r.output
    r = runner.invoke(app, ["history", "trend", "--history", str(db), "--format", "json",
                            "--dataset", "kb", "--last", "3"])
    out = json.loads(r.output)
    assert out["n_runs"] == 3 and out["patterns"] == []  # 3 runs can never make a trend
    assert r.exit_code == 0


def test_trend_without_a_pattern_exits_0(db: Path) -> None:
    r = runner.invoke(app, ["history", "trend", "--history", str(db)])
    assert r.exit_code == 0, r.output
    assert "mean quality: 100.0 → 90.0 (-10.0) over 2 runs: too few runs to call a trend" \
        in r.output
    assert "too few runs for a trend (2; at least 5 needed)" in r.output
    assert "no trend pattern" in r.output


def test_trend_of_two_runs_94_9_then_100_is_not_called_flat(tmp_path: Path) -> None:
    from tests.history.helpers import gate_run, golden_set

    g = golden_set(78)
    with History(tmp_path / "h.db") as h:
        h.record(gate_run(g, {f"q{i:02d}": {f"q{i:02d}_b": 15} for i in range(4)}))
        h.record(gate_run(g))
    r = runner.invoke(app, ["history", "trend", "--history", str(tmp_path / "h.db")])
    assert r.exit_code == 0, r.output
    assert ("mean quality: 94.9 → 100.0 (+5.1) over 2 runs: too few runs to call a trend (at "
            "least 5 needed)") in r.output
    assert "flat" not in r.output and "+0/run" not in r.output


def test_every_command_and_option_is_documented() -> None:
    import typer.main

    # promote is an operation (its command lives with them) but docs/history.md documents it,
    # beside the accepted runs it checks
    docs = (Path(__file__).resolve().parents[2] / "docs" / "history.md").read_text("utf-8")
    root = typer.main.get_command(app)
    group = root.commands["history"]  # type: ignore[attr-defined]
    commands = {f"history {name}": cmd for name, cmd in group.commands.items()
                if name != "groups"}  # `history groups` is documented in docs/operations.md
    commands["ops promote"] = root.commands["ops"].commands["promote"]  # type: ignore[attr-defined]
    assert set(commands) == {"history list", "history show", "history compare", "history trend",
                             "history copy", "history funnel", "history prune", "ops promote"}
    for name, cmd in commands.items():
        assert f"recallwatch {name}" in docs, name
        for param in cmd.params:
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in docs, f"{name} {opt} is not in docs/history.md"
