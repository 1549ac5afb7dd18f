"""Named, recorded migrations; a real v1 file (made with the v1 DDL) migrates and keeps its runs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from recallwatch.errors import HistoryError
from recallwatch.history import MIGRATIONS, SCHEMA_VERSION, History, record_gate_run
from recallwatch.history._schema import _statements
from tests.history.helpers import gate_run, golden_set


def _applied(path: Path) -> list[tuple[int, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
        return rows.fetchall()
    finally:
        conn.close()


def test_a_new_file_records_every_migration(tmp_path: Path) -> None:
    History(tmp_path / "h.db").close()
    assert _applied(tmp_path / "h.db") == [(i + 1, name) for i, (name, _) in enumerate(MIGRATIONS)]
    assert SCHEMA_VERSION == len(MIGRATIONS) >= 2
    History(tmp_path / "h.db").close()  # reopening applies nothing twice
    assert len(_applied(tmp_path / "h.db")) == SCHEMA_VERSION


def _v1_file(path: Path) -> str:
    """A history as recallwatch with only migration 1 wrote it, holding one run."""
    run = gate_run(golden_set(3), {"q01": {"q01_b": 12}})
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for statement in _statements(MIGRATIONS[0][1]):
        conn.execute(statement)
    conn.execute("INSERT INTO schema_migrations VALUES (1, ?, '2025-01-01T00:00:00+00:00')",
                 (MIGRATIONS[0][0],))
    a = run.aggregate
    conn.execute(
        "INSERT INTO runs (run_id, created_at, dataset_name, dataset_version, dataset_hash, "
        "policy_hash, config_hash, embedder, store_uri, index_version, verdict, n_queries, "
        "mean_quality, mean_recall, mean_precision, mrr, mean_ndcg, mean_noise, failed_queries, "
        "result_json) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run.run_id, run.created_at, "kb", "1", run.dataset_hash, run.policy_hash,
         run.config_hash, run.verdict, a.n_queries, a.mean_quality, a.mean_recall,
         a.mean_precision, a.mrr, a.mean_ndcg, a.mean_noise, a.failed_queries,
         json.dumps(run.to_dict())),
    )
    conn.close()
    return run.run_id


def test_a_v1_file_migrates_and_keeps_its_runs(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    old_id = _v1_file(db)
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
    conn = sqlite3.connect(db)
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    conn.close()
    assert {"runs_baseline", "runs_dataset", "runs_store", "monitor_runs_kind"} <= indexes


def test_a_file_from_a_newer_recallwatch_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    History(db).close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO schema_migrations VALUES (?, '9999_future', 'x')",
                 (SCHEMA_VERSION + 1,))
    conn.close()
    with pytest.raises(HistoryError, match=r"9999_future.*upgrade recallwatch"):
        History(db)
