"""The history: a run written whole and read back, run references, monitor records — on a SQLite
file and on PostgreSQL (``history_at``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from recallwatch.errors import HistoryError, UsageError
from recallwatch.history import History, record_gate_run
from tests.history.helpers import gate_run, golden_set


def test_a_run_round_trips_with_every_query_row(history_at: str) -> None:
    g = golden_set(6)
    run = gate_run(g, {"q02": {"q02_b": 15}})
    with History(history_at) as h:
        h.record(run)
        back = h.load(run.run_id)
        assert back.to_dict() == run.to_dict()
        s = h.summary(run.run_id)
        assert (s.verdict, s.n_queries, s.failed_queries) == (run.verdict, 6, 1)
        assert s.mean_quality == run.aggregate.mean_quality  # REAL / DOUBLE PRECISION: exact
        rows = h._db.execute("SELECT query_id, passed, recall, expected, failed_rules FROM "
                             "query_results WHERE run_id = ? ORDER BY query_id", (run.run_id,))
        if h.backend == "sqlite":
            assert h._db.execute("PRAGMA journal_mode")[0][0] == "wal"
    assert [r[0] for r in rows] == [q.id for q in g.queries]
    q02 = rows[2]
    assert q02[1] == 0 and q02[2] == pytest.approx(0.5)
    assert {e["id"]: e["rank"] for e in json.loads(q02[3])} == {"q02_a": 1, "q02_b": 15}
    assert json.loads(q02[4]) == ["recall"]


def _every_value(h: History) -> str:
    """Every value of every table, as text."""
    tables = ("runs", "query_results", "monitor_runs", "schema_migrations")
    return "\n".join(repr(row) for t in tables for row in h._db.execute(f"SELECT * FROM {t}"))


def test_store_uri_password_is_redacted_even_if_the_caller_forgot(history_at: str) -> None:
    run = gate_run(golden_set(2))
    leaky = replace(run, store={"uri": "postgresql://app:hunter2@db:5432/kb?table=c",
                                "version": "7", "count": 3})
    with History(history_at) as h:
        h.record(leaky)
        h.record_monitor_run("drift", {}, store_uri="postgresql://app:hunter2@db:5432/kb")
        assert h.summary(run.run_id).store_uri == "postgresql://app:***@db:5432/kb?table=c"
        assert h.load(run.run_id).store["uri"] == "postgresql://app:***@db:5432/kb?table=c"
        assert "app:***@db" in _every_value(h) and "hunter2" not in _every_value(h)
    if not history_at.startswith("postgresql://"):
        assert b"hunter2" not in Path(history_at).read_bytes()
        wal = Path(history_at + "-wal")
        assert not wal.exists() or b"hunter2" not in wal.read_bytes()


def test_run_references(history_at: str) -> None:
    g = golden_set(4)
    ok1 = gate_run(g)
    stop = gate_run(g, {"q00": {"q00_a": 20}})
    ok2 = gate_run(g)
    db = history_at
    for r in (ok1, stop, ok2):
        record_gate_run(r, db)
    with History(db) as h:
        assert h.resolve("latest") == ok2.run_id
        assert h.resolve("previous") == stop.run_id
        assert h.resolve("accepted") == ok2.run_id
        assert h.resolve(stop.run_id) == stop.run_id
        unique = next(r.run_id[:n] for n in range(8, 40) for r in [stop]
                      if all(not o.run_id.startswith(r.run_id[:n]) for o in (ok1, ok2)))
        assert h.resolve(unique) == stop.run_id
        assert h.resolve(unique.lower()) == stop.run_id  # a prefix ignores ASCII case on both
        with pytest.raises(UsageError, match="ambiguous"):
            h.resolve(ok1.run_id[:4])  # every id starts with the year
        with pytest.raises(UsageError, match=r"no run 'nope'.*history list"):
            h.resolve("nope")
        with pytest.raises(UsageError, match="no run"):
            h.resolve("2%")  # LIKE wildcards are literal
        with pytest.raises(UsageError, match="no latest run of dataset 'other'"):
            h.resolve("latest", dataset="other")


def test_missing_history_is_an_error_for_readers(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"no run history at .*missing\.db"):
        History(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_an_empty_database_is_a_missing_history_for_readers(pg_databases: Any) -> None:
    uri = pg_databases()
    for read_only in (False, True):
        with pytest.raises(HistoryError, match=f"^no run history at {uri} "):
            History(uri, create=False, read_only=read_only)
    History(uri).close()  # a writer creates it
    History(uri, create=False).close()


def test_a_file_that_is_not_sqlite_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_text("this is not a database, just a text file with enough bytes " * 20)
    with pytest.raises(HistoryError, match=r"notes\.db: cannot open the run history"):
        History(bad)


def test_a_run_id_is_recorded_once(history_at: str) -> None:
    run = gate_run(golden_set(2))
    with History(history_at) as h:
        h.record(run)
        with pytest.raises(HistoryError, match=f"run {run.run_id} cannot be recorded"):
            h.record(run)
        assert len(h.runs()) == 1


def test_monitor_runs_are_generic_records(history_at: str) -> None:
    with History(history_at) as h:
        first = h.record_monitor_run("drift", {"recall_vs_exact": 0.93, "probes": 200},
                                     store_uri="postgresql://u:pw@h/db?table=t",
                                     index_version="4", status="ok")
        h.record_monitor_run("latency", {"p99_ms": 12.5})
        drift = h.monitor_runs(kind="drift")
        assert [m.id for m in drift] == [first]
        assert drift[0].payload == {"recall_vs_exact": 0.93, "probes": 200}
        assert drift[0].store_uri == "postgresql://u:***@h/db?table=t"
        assert [m.kind for m in h.monitor_runs()] == ["latency", "drift"]


def test_runs_filter_by_dataset_newest_first(history_at: str) -> None:
    a, b = golden_set(2, name="alpha"), golden_set(2, name="beta")
    db = history_at
    ids = [record_gate_run(gate_run(x), db).run_id for x in (a, b, a)]
    with History(db) as h:
        assert [r.run_id for r in h.runs(dataset="alpha")] == [ids[2], ids[0]]
        assert [r.run_id for r in h.runs(limit=2)] == [ids[2], ids[1]]


def test_a_history_under_a_file_is_a_history_error_naming_the_folder(tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(HistoryError, match=r"cannot create the run history's folder .*notes\.txt"):
        History(blocker / "runs" / "history.db")
