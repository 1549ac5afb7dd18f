"""What is particular to a history on PostgreSQL: the same tables as the SQLite file, credentials
from the environment and never shown, schemas, the writers' lock, a read-only dashboard session,
a lost server. (Everything shared runs on both backends in the other modules.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recallwatch.errors import HistoryError, UsageError
from recallwatch.history import History, record_gate_run
from tests.history.helpers import gate_run, golden_set, raw_backend
from tests.pg import PG_PASSWORD, PostgresServer

NewHistory = Callable[[], str]


def _columns(location: str) -> dict[str, list[tuple[str, str, bool]]]:
    """Per table: (column, type, nullable), in order, in SQLite's type names."""
    out: dict[str, list[tuple[str, str, bool]]] = {}
    with raw_backend(location) as db:
        for table in ("runs", "query_results", "monitor_runs", "online_readouts",
                      "experiments", "schema_migrations"):
            if db.kind == "sqlite":
                rows = db.execute(f"PRAGMA table_info({table})")
                out[table] = [(r[1], r[2], not r[3] and not r[5]) for r in rows]
            else:
                names = {"bigint": "INTEGER", "double precision": "REAL", "text": "TEXT",
                         "bytea": "BLOB"}
                rows = db.execute("SELECT column_name, data_type, is_nullable FROM "
                                  "information_schema.columns WHERE table_name = ? "
                                  "ORDER BY ordinal_position", (table,))
                out[table] = [(r[0], names[r[1]], r[2] == "YES") for r in rows]
    return out


def test_the_same_tables_columns_and_indexes_as_sqlite(tmp_path: Path,
                                                       pg_databases: NewHistory) -> None:
    sqlite, pg = str(tmp_path / "h.db"), pg_databases()
    History(sqlite).close()
    History(pg).close()
    assert _columns(pg) == _columns(sqlite)
    assert ("seq", "INTEGER", False) in _columns(pg)["runs"]
    with raw_backend(pg) as db:
        indexes = {r[0] for r in db.execute("SELECT indexname FROM pg_indexes WHERE "
                                            "schemaname = 'public' AND indexname NOT LIKE '%pkey'"
                                            " AND indexname NOT LIKE '%key'")}
    assert indexes == {"runs_baseline", "runs_dataset", "runs_store", "monitor_runs_kind",
                       "online_readouts_change"}


def test_the_password_comes_from_the_environment_and_is_never_shown(
        postgres_server: PostgresServer, pg_databases: NewHistory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    uri = pg_databases()
    monkeypatch.delenv("PGPASSWORD")
    with pytest.raises(HistoryError, match=f"^{uri}: cannot connect to PostgreSQL: .*password"):
        History(uri)
    monkeypatch.setenv("TEAM_HISTORY_PW", PG_PASSWORD)
    with History(f"{uri}?password_env=TEAM_HISTORY_PW") as h:  # the store URIs' way
        assert h.location == f"{uri}?password_env=TEAM_HISTORY_PW"
    typed = uri.replace("postgres@", f"postgres:{PG_PASSWORD}@")
    with History(typed) as h:  # accepted when typed, never shown
        assert h.location == uri.replace("postgres@", "postgres:***@")
        record_gate_run(gate_run(golden_set(2)), typed)
        with pytest.raises(UsageError) as exc:
            h.resolve("nope")
        assert PG_PASSWORD not in str(exc.value) and "***" in str(exc.value)
    wrong = uri.replace("postgres@", "postgres:not-the-password@")
    with pytest.raises(HistoryError, match="password authentication failed") as failed:
        History(wrong)
    assert "not-the-password" not in str(failed.value)


def test_bad_uris_are_usage_errors(postgres_server: PostgresServer) -> None:
    base = f"postgresql://postgres@127.0.0.1:{postgres_server.port}"
    with pytest.raises(UsageError, match=r"unknown parameter 'table' \(known: password_env, "
                       "schema, sslmode"):
        History(f"{base}/db?table=t")
    with pytest.raises(UsageError, match="name the database"):
        History(base)
    with pytest.raises(UsageError, match="schema 'Team-A' is invalid"):
        History(f"{base}/db?schema=Team-A")
    with pytest.raises(UsageError, match="a PostgreSQL URI was turned into a file path"):
        History(Path(f"{base}/db"))


def test_two_histories_in_one_database_by_schema(pg_databases: NewHistory) -> None:
    uri = pg_databases()
    a, b = f"{uri}?schema=team_a", f"{uri}?schema=team_b"
    ra = record_gate_run(gate_run(golden_set(2)), a)
    rb = record_gate_run(gate_run(golden_set(3)), b)
    with History(a, create=False) as ha, History(b, create=False) as hb:
        assert [r.run_id for r in ha.runs()] == [ra.run_id]
        assert [r.run_id for r in hb.runs()] == [rb.run_id]
    with pytest.raises(HistoryError, match="no run history at"):
        History(f"{uri}?schema=team_c", create=False)  # not created by a reader
    with History(uri) as public:  # the default schema is another history again
        assert public.runs() == []


def test_writers_queue_behind_the_lock_and_readers_never_wait(pg_databases: NewHistory) -> None:
    uri = pg_databases()
    record_gate_run(gate_run(golden_set(2)), uri)
    with (History(uri) as holder, History(uri, timeout=1.0) as waiter, History(uri) as reader,
          holder._write()):
        assert len(reader.runs()) == 1  # a reader is not blocked by a writer
        started = time.monotonic()
        with pytest.raises(HistoryError, match=r"cannot start a write: .*lock timeout"):
            waiter.record_monitor_run("drift", {})
        assert 0.9 < time.monotonic() - started < 10
    # Once the holder commits, a waiting writer goes ahead.
    with History(uri) as holder, History(uri) as waiter, History(uri) as reader:
        done = threading.Event()

        def write() -> None:
            waiter.record_monitor_run("drift", {})
            done.set()

        with holder._write():
            thread = threading.Thread(target=write)
            thread.start()
            time.sleep(0.3)
            assert not done.is_set()
        thread.join(60)
        assert done.is_set()
        assert [m.kind for m in reader.monitor_runs()] == ["drift"]


def test_the_dashboard_session_cannot_write(pg_databases: NewHistory) -> None:
    uri = pg_databases()
    History(uri).close()
    with History(uri, read_only=True) as h:
        with pytest.raises(HistoryError, match=r"cannot write a x record: .*read-only transaction"):
            h.record_monitor_run("x", {})
        with pytest.raises(HistoryError, match="read-only transaction"):
            h.record(gate_run(golden_set(2)))
        assert h.monitor_runs() == [] and h.runs() == []


def test_a_lost_server_is_a_history_error(postgres_server: PostgresServer,
                                          pg_databases: NewHistory) -> None:
    uri = pg_databases()
    run = record_gate_run(gate_run(golden_set(2)), uri)
    with History(uri) as h:
        postgres_server.restart()
        with pytest.raises(HistoryError, match=f"^{uri}: cannot read the run history: "):
            h.load(run.run_id)
        with pytest.raises(HistoryError, match=f"^{uri}: cannot start a write: "):
            h.record_monitor_run("drift", {})
    with History(uri) as h:  # what was committed is there after the restart
        assert h.load(run.run_id).to_dict() == run.to_dict()


def test_a_nul_character_is_refused_by_name(pg_databases: NewHistory) -> None:
    """PostgreSQL text cannot hold U+0000 (SQLite can): the run is refused whole, with a reason,
    rather than stored altered."""
    uri = pg_databases()
    g = golden_set(2)
    run = gate_run(g)
    bad = replace_query_id(run, "q\x00")
    with History(uri) as h:
        with pytest.raises(HistoryError, match=f"cannot write run {run.run_id}: .*0x00"):
            h.record(bad)
        assert h.runs() == []


def replace_query_id(run: Any, new_id: str) -> Any:
    from dataclasses import replace

    return replace(run, queries=(replace(run.queries[0], id=new_id), *run.queries[1:]))
