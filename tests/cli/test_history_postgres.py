"""Every command that takes ``--history`` answers the same from PostgreSQL as from the SQLite file
it was copied from; the gate records there; promote and serve work on it; no password is shown."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import uvicorn
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.history import History, copy_history, record_gate_run
from tests.cli.test_history import _golden, _results
from tests.clirun import untimed
from tests.history.helpers import KB, KB_GOLDEN, kb
from tests.pg import PG_PASSWORD

__all__ = ["kb"]  # the fixture, imported for pytest

runner = CliRunner(env={"COLUMNS": "250"})


def _gate(tmp_path: Path, name: str, lost: set[int], history: str) -> object:
    return runner.invoke(app, ["gate", str(tmp_path / "golden.yaml"), "--results",
                               str(_results(tmp_path, name, lost)), "--policy",
                               str(tmp_path / "policy.yaml"), "--history", history])


def _latest(history: str) -> str:
    with History(history, create=False) as h:
        return h.resolve("latest")


def test_every_history_command_answers_the_same(tmp_path: Path,
                                                pg_databases: Callable[[], str]) -> None:
    _golden(tmp_path)
    db = str(tmp_path / "h.db")
    assert _gate(tmp_path, "ok", set(), db).exit_code == 0  # type: ignore[attr-defined]
    assert _gate(tmp_path, "bad", {3, 8}, db).exit_code == 1  # type: ignore[attr-defined]
    uri = pg_databases()
    copy_history(db, uri)
    typed = uri.replace("postgres@", f"postgres:{PG_PASSWORD}@")
    shown = uri.replace("postgres@", "postgres:***@")

    # The gate records on both, against the same baselines.
    here = _gate(tmp_path, "worse", {3, 8, 11}, db)
    there = _gate(tmp_path, "worse", {3, 8, 11}, typed)
    assert (here.exit_code, there.exit_code) == (1, 1)  # type: ignore[attr-defined]
    new_here, new_there = _latest(db), _latest(uri)
    # the two runs measured their own times: compare what they say, not how fast they were
    assert (untimed(there.output.replace(new_there, new_here))  # type: ignore[attr-defined]
            == untimed(here.output))  # type: ignore[attr-defined]
    assert "vs last accepted" in here.output  # type: ignore[attr-defined]

    # The read commands over the same rows (the two "worse" runs differ in id and time).
    copy_history(db, uri, replace=True)

    commands = [["history", "list"], ["history", "list", "--format", "json"],
                ["history", "show", "latest"], ["history", "show", "accepted", "--format", "json"],
                ["history", "compare", "previous", "latest"],
                ["history", "compare", "accepted", "latest", "--format", "json"],
                ["history", "trend"], ["history", "trend", "--format", "json"],
                ["history", "groups", "latest", "--by", "domain"]]
    for words in commands:
        a = runner.invoke(app, [*words, "--history", db])
        b = runner.invoke(app, [*words, "--history", typed])
        assert (b.exit_code, a.exit_code) == (0, 0), (words, a.output, b.output)
        assert PG_PASSWORD not in b.output
        assert b.output.replace(shown, db) == a.output, words
    r = runner.invoke(app, ["history", "list", "--history", typed])
    assert r.output.startswith(f"3 run(s) in {shown}\n")


def test_errors_are_one_line_with_exit_2(pg_databases: Callable[[], str]) -> None:
    uri = pg_databases()
    r = runner.invoke(app, ["history", "list", "--history", uri])
    assert r.exit_code == 2
    assert r.output == (f"Error: no run history at {uri} (run the gate first, or name the "
                        "database with --history)\n")
    r = runner.invoke(app, ["history", "list", "--history", uri + "?table=x"])
    assert r.exit_code == 2 and r.output.startswith(f"Error: history {uri}?table=x: unknown "
                                                    "parameter 'table'")


def test_promote_reads_and_records_on_postgresql(kb: KB, tmp_path: Path,
                                                 pg_databases: Callable[[], str]) -> None:
    uri = pg_databases()
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(KB_GOLDEN), encoding="utf-8")
    policy = tmp_path / "policy.yaml"
    policy.write_text("noise_ceiling: 1.0\n", encoding="utf-8")
    run = record_gate_run(kb.gate(), uri, store=kb.store)
    r = runner.invoke(app, ["ops", "promote", "--store", kb.uri, "--history", uri, "--golden",
                            str(golden), "--policy", str(policy)])
    assert r.exit_code == 0, r.output
    assert r.output == (f"promoted {kb.store.uri} version {run.store['version']} to production "
                        f"(ACCEPT run {run.run_id})\n")
    with History(uri) as h:
        [record] = h.monitor_runs(kind="promote")
    assert record.status == "promoted" and record.payload["accepted_run"] == run.run_id


def test_serve_names_the_history_without_its_password(
        pg_databases: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> None:
    uri = pg_databases()
    History(uri).close()

    def run(self: uvicorn.Server, sockets: list[socket.socket]) -> None:  # no event loop here
        sockets[0].close()

    monkeypatch.setattr(uvicorn.Server, "run", run)
    typed = uri.replace("postgres@", f"postgres:{PG_PASSWORD}@")
    r = CliRunner().invoke(app, ["ops", "serve", "--history", typed, "--port", "0"])
    assert r.exit_code == 0, r.output
    assert f"(history {uri.replace('postgres@', 'postgres:***@')}, read-only)" in r.output
    assert PG_PASSWORD not in r.output
