"""Named, recorded migrations; a real v1 history (made with the v1 DDL) migrates and keeps its runs
— on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from recallwatch.acceptance.model import GateResult
from recallwatch.errors import HistoryError
from recallwatch.history import MIGRATIONS, SCHEMA_VERSION, History, record_gate_run
from recallwatch.history._backend import Backend
from recallwatch.history._schema import _statements, applied_migrations
from tests.history.helpers import gate_run, golden_set, raw_backend


def _applied(location: str) -> list[tuple[int, str]]:
    with raw_backend(location) as db:
        return applied_migrations(db)


def test_a_new_history_records_every_migration(history_at: str) -> None:
    History(history_at).close()
    assert _applied(history_at) == [(i + 1, name) for i, (name, _) in enumerate(MIGRATIONS)]
    assert SCHEMA_VERSION == len(MIGRATIONS) >= 2
    History(history_at).close()  # reopening applies nothing twice
    assert len(_applied(history_at)) == SCHEMA_VERSION


def _v1_history(location: str) -> str:
    """A history as recallwatch with only migration 1 wrote it, holding one run."""
    run = gate_run(golden_set(3), {"q01": {"q01_b": 12}})
    with raw_backend(location) as db:
        _write_v1(db, run)
    return run.run_id


def _write_v1(db: Backend, run: GateResult) -> None:
    db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
               "applied_at TEXT NOT NULL)")
    for statement in _statements(MIGRATIONS[0][1]):
        db.execute(db.ddl(statement))
    db.execute("INSERT INTO schema_migrations VALUES (1, ?, '2025-01-01T00:00:00+00:00')",
               (MIGRATIONS[0][0],))
    a = run.aggregate
    db.execute(
        "INSERT INTO runs (run_id, created_at, dataset_name, dataset_version, dataset_hash, "
        "policy_hash, config_hash, embedder, store_uri, index_version, verdict, n_queries, "
        "mean_quality, mean_recall, mean_precision, mrr, mean_ndcg, mean_noise, failed_queries, "
        "result_json) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run.run_id, run.created_at, "kb", "1", run.dataset_hash, run.policy_hash,
         run.config_hash, run.verdict, a.n_queries, a.mean_quality, a.mean_recall,
         a.mean_precision, a.mrr, a.mean_ndcg, a.mean_noise, a.failed_queries,
         json.dumps(run.to_dict())),
    )


def test_a_v1_history_migrates_and_keeps_its_runs(history_at: str) -> None:
    db = history_at
    old_id = _v1_history(db)
    assert _applied(db) == [(1, MIGRATIONS[0][0])]
    with History(db) as h:
        assert [r.run_id for r in h.runs()] == [old_id]
        assert h.load(old_id).verdict == "STOP"
        h.record_monitor_run("drift", {"recall": 0.9})  # a table that v1 did not have
        assert h.integrity_check() == "ok"
    assert [v for v, _ in _applied(db)] == list(range(1, SCHEMA_VERSION + 1))
    # The old run serves as the previous run of a new one.
    new = record_gate_run(gate_run(golden_set(3)), db)
    assert new.comparison is not None
    assert new.comparison["previous"]["run_id"] == old_id
    assert new.comparison["previous"]["newly_passing"] == ["q01"]
    with raw_backend(db) as raw:
        indexes = {r[0] for r in raw.execute(
            "SELECT indexname FROM pg_indexes" if raw.kind == "postgresql"
            else "SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"runs_baseline", "runs_dataset", "runs_store", "monitor_runs_kind"} <= indexes


def test_a_history_from_a_newer_recallwatch_is_refused(history_at: str) -> None:
    db = history_at
    History(db).close()
    with raw_backend(db) as raw:
        raw.execute("INSERT INTO schema_migrations VALUES (?, '9999_future', 'x')",
                    (SCHEMA_VERSION + 1,))
    with pytest.raises(HistoryError, match=r"9999_future.*upgrade recallwatch"):
        History(db)
    with pytest.raises(HistoryError, match=r"not this recallwatch's.*upgrade recallwatch"):
        History(db, read_only=True)


def test_a_foreign_sqlite_file_is_named(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (x)")
    conn.close()
    with pytest.raises(HistoryError, match=r"other\.db: the run history's schema \(0 migrations"):
        History(db, read_only=True)
