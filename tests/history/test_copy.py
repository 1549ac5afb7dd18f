"""``history copy``: SQLite → PostgreSQL → SQLite keeps every row, byte for byte and float for
float; a non-empty destination is refused unless told; the copy behaves as the original."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import HistoryError, UsageError
from recallwatch.history import (
    SCHEMA_VERSION,
    History,
    copy_history,
    record_experiment,
    record_gate_run,
)
from recallwatch.history._schema import applied_migrations
from tests.history.helpers import gate_run, golden_set, raw_backend, timed_cost
from tests.pg import PG_PASSWORD

TABLES = {"runs": "seq", "query_results": "run_id, query_id", "run_timings": "run_id, series",
          "monitor_runs": "id", "online_readouts": "id", "experiments": "id"}


def _rows(location: str) -> dict[str, Any]:
    """Every row of every table, in key order, and the migrations recorded."""
    with raw_backend(location) as db:
        out: dict[str, Any] = {t: db.execute(f"SELECT * FROM {t} ORDER BY {key}")
                               for t, key in TABLES.items()}
        out["columns"] = {t: db.columns(t) for t in TABLES}
        out["schema_migrations"] = applied_migrations(db)
    return out


def _fill(location: str) -> None:
    """Runs of two datasets, ACCEPT and STOP, on a store (its URI carrying a password), odd
    floats and strings; monitor records of several kinds."""
    kb, other = golden_set(5, domains=("viajes", "rrhh")), golden_set(3, name="ñandú « »")
    runs = [gate_run(kb), gate_run(kb, {"q01": {"q01_b": 14}}), gate_run(other),
            gate_run(kb, {"q03": {"q03_a": 2, "q03_b": 1}}),
            gate_run(other, {"q00": {"q00_a": 30}})]
    runs[3] = replace(runs[3], store={"uri": "postgresql://app:hunter2@db/kb?table=c",
                                      "version": 7, "count": 3},
                      cost=timed_cost(baseline=runs[1].run_id))  # per-call timings, 3 series
    for r in runs:
        record_gate_run(r, location)
    with History(location) as h:
        h.record_monitor_run("drift", {"recall_vs_exact": 0.1 + 0.2, "big": 2**53 + 1,
                                       "text": "línea\n\t\"quoted\" \u2028 \U0001f600"},
                             store_uri="lancedb://kb?table=chunks", index_version="7",
                             status="ok")
        h.record_monitor_run("promote", {"allowed": False, "missing": ["x"]})
        h.record_monitor_run("latency", {"p99_ms": 1e-300}, status=None)
        h.record_online_readout({  # odd floats, NULLs, text: the funnel table copies whole
            "change_run": runs[1].run_id, "promote_id": 2, "offline_metric": "ndcg",
            "offline_baseline": runs[0].run_id, "offline_delta": 0.1 + 0.2,
            "online_metric": "ctr", "online_delta": -1e-300, "online_ci_low": None,
            "online_ci_high": 2**-1074, "online_verdict": "no difference",
            "agreement": "disagreed", "payload": {"reading": "mirage « ñ »\n😀"}})
        record_experiment(h, json.dumps({"plan": "plan ñ.yaml", "winner": "hybrid",
                                         "confirmed": False, "variants": [{"name": "a"}]}),
                          out_dir="/exp/ñ « »")


def test_sqlite_to_postgresql_and_back_keeps_every_row(tmp_path: Path,
                                                       pg_databases: Callable[[], str]) -> None:
    original, back = str(tmp_path / "original.db"), str(tmp_path / "back.db")
    pg = pg_databases()
    _fill(original)
    there = copy_history(original, pg)
    again = copy_history(pg, back)
    assert (there.runs, there.query_results, there.monitor_runs, there.online_readouts,
            there.experiments) == (5, 21, 3, 1, 1)
    assert (again.runs, again.query_results, again.monitor_runs, again.online_readouts,
            again.experiments) == (5, 21, 3, 1, 1)
    assert there.schema_version == again.schema_version == SCHEMA_VERSION
    rows = _rows(original)
    assert len(rows["runs"]) == 5 and len(rows["query_results"]) == 21
    assert _rows(pg) == rows  # ints, floats (exactly), text (byte for byte), NULLs
    assert _rows(back) == rows
    assert "hunter2" not in json.dumps(rows, default=str)


def test_the_copy_behaves_as_the_original(tmp_path: Path,
                                          pg_databases: Callable[[], str]) -> None:
    original, pg = str(tmp_path / "original.db"), pg_databases()
    _fill(original)
    copy_history(original, pg)
    # The next run gets the same baselines and the same comparison on both.
    new = gate_run(golden_set(5, domains=("viajes", "rrhh")), {"q04": {"q04_a": 11}})
    here, there = record_gate_run(new, original), record_gate_run(new, pg)
    assert there.comparison == here.comparison
    assert there.comparison is not None and there.comparison["last_accepted"] is not None
    with History(original) as a, History(pg) as b:
        assert [r.to_dict() for r in a.runs()] == [r.to_dict() for r in b.runs()]
        assert a.resolve("accepted") == b.resolve("accepted")
        assert a.monitor_runs() == b.monitor_runs()
        assert a.online_readouts() == b.online_readouts()
        # ids continue after the copied ones
        assert a.record_monitor_run("x", {}) == b.record_monitor_run("x", {}) == 4


def test_a_non_empty_destination_is_refused_unless_replaced(
        tmp_path: Path, new_history: Callable[[], str]) -> None:
    source, dest = str(tmp_path / "source.db"), new_history()
    _fill(source)
    record_gate_run(gate_run(golden_set(2, name="theirs")), dest)
    before = _rows(dest)
    with pytest.raises(UsageError, match=r"is not empty \(1 run\(s\), 0 monitor record\(s\)\); "
                       "copying into it would mix two histories.*--replace"):
        copy_history(source, dest)
    assert _rows(dest) == before
    report = copy_history(source, dest, replace=True)
    assert report.replaced == {"runs": 1, "query_results": 2, "run_timings": 0,
                               "monitor_runs": 0, "online_readouts": 0, "experiments": 0}
    assert _rows(dest) == _rows(source)


def test_the_source_is_never_written_nor_created(tmp_path: Path,
                                                 new_history: Callable[[], str]) -> None:
    with pytest.raises(HistoryError, match="no run history at"):
        copy_history(str(tmp_path / "missing.db"), new_history())
    assert not (tmp_path / "missing.db").exists()
    source = new_history()
    _fill(source)
    before = _rows(source)
    copy_history(source, str(tmp_path / "copy.db"))
    assert _rows(source) == before
    with pytest.raises(UsageError, match="is both the source and the destination"):
        copy_history(source, source, replace=True)


def test_the_command(tmp_path: Path, postgres_server: Any, pg_databases: Callable[[], str]) -> None:
    source = str(tmp_path / "source.db")
    _fill(source)
    dest = pg_databases()
    typed = dest.replace("postgres@", f"postgres:{PG_PASSWORD}@")  # a password typed in the URI
    runner = CliRunner()
    r = runner.invoke(app, ["history", "copy", source, typed])
    assert r.exit_code == 0, r.output
    assert r.output == (f"copied 5 run(s), 21 query row(s), 3 monitor record(s), 1 online "
                        f"readout(s) and 1 experiment(s) from {source} "
                        f"to {dest.replace('postgres@', 'postgres:***@')}; schema version "
                        f"{SCHEMA_VERSION}\n")
    r = runner.invoke(app, ["history", "copy", source, dest])
    assert r.exit_code == 2
    assert r.output.startswith(f"Error: history copy: {dest} is not empty (5 run(s), 3 monitor "
                               "record(s))")
    r = runner.invoke(app, ["history", "copy", source, typed, "--replace", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["replaced"] == {"runs": 5, "query_results": 21, "run_timings": 3,
                                                "monitor_runs": 3, "online_readouts": 1,
                                                "experiments": 1}
    assert PG_PASSWORD not in r.output
    r = runner.invoke(app, ["history", "list", "--history", dest])
    assert r.exit_code == 0 and r.output.startswith(f"5 run(s) in {dest}\n")
