"""Per-call timings in the history (migration ``0007_run_timings``): kept once, apart from the run's
result JSON, loaded back whole, pruned with their run; a history from before the migration keeps
its runs, and the cost rule says a baseline recorded then cannot be judged for noise — on a SQLite
file and on PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import replace

from recallwatch.acceptance.limits import against_baseline
from recallwatch.formats.policy_limits import Limits
from recallwatch.history import MIGRATIONS, History, prune_history
from recallwatch.history._detail import unpack
from recallwatch.history._schema import _statements, applied_migrations
from tests.history.helpers import LENIENT, gate_run, golden_set, raw_backend, timed_cost
from tests.history.test_answer_columns import _without_0008

CAPPED = replace(LENIENT, limits=Limits(max_cost_increase=0.25))


def test_timings_are_stored_once_and_loaded_whole(history_at: str) -> None:
    base = gate_run(golden_set(3))
    run = replace(gate_run(golden_set(3)), cost=timed_cost(1, baseline=base.run_id))
    with History(history_at) as h:
        h.record(run)
        loaded = h.load(run.run_id)
    assert loaded.cost == run.cost
    with raw_backend(history_at) as db:
        rows = db.execute("SELECT series, calls FROM run_timings ORDER BY series")
        (text,) = db.execute("SELECT result_json, result_zlib FROM runs")
    assert [(str(s), int(n)) for s, n in rows] == [
        ("baseline.search_ms", 400), ("embed_ms", 100), ("search_ms", 400)]
    stored = json.loads(unpack(*text))["cost"]  # the result JSON holds the figures only
    assert stored["samples"] == {} and "search_ms" not in stored["baseline"]
    assert run.cost is not None and stored["search_p99_ms"] == run.cost["search_p99_ms"]


def test_prune_removes_a_run_with_its_timings(history_at: str) -> None:
    g = golden_set(3)
    runs = [replace(gate_run(g), cost=timed_cost(i)) for i in range(3)]
    with History(history_at) as h:
        for r in runs:
            h.record(r)
        report = prune_history(h, keep_last=1)
    assert {r.run_id for r in report.removed} == {runs[0].run_id, runs[1].run_id}
    with raw_backend(history_at) as db:
        kept = {str(r[0]) for r in db.execute("SELECT DISTINCT run_id FROM run_timings")}
    assert kept == {runs[2].run_id}


def _v6_history(location: str) -> str:
    """A history as recallwatch wrote it before per-call timings were kept, holding one
    accepted run on a store whose cost has figures only."""
    run = replace(gate_run(golden_set(3), policy=CAPPED),
                  cost={k: v for k, v in timed_cost(2).items() if k != "samples"})
    with raw_backend(location) as db:
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT "
                   "NULL, applied_at TEXT NOT NULL)")
        for version, (name, ddl) in enumerate(MIGRATIONS[:6], start=1):
            for statement in _statements(ddl):
                db.execute(db.ddl(statement))
            db.execute("INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00+00:00')",
                       (version, name))
    with History(location) as h:  # migrates to the latest: the run is written as before
        h.record(run)
    _without_0008(location)  # the migrations after 0007 undone first
    with raw_backend(location) as db:
        db.execute("DROP TABLE run_timings")
        db.execute("DELETE FROM schema_migrations WHERE version = 7")
    return run.run_id


def test_a_history_from_before_the_timings_migrates_and_its_baseline_says_why(
        history_at: str) -> None:
    old_id = _v6_history(history_at)
    with raw_backend(history_at) as db:
        assert len(applied_migrations(db)) == 6
    with History(history_at) as h:
        base = h.load(old_id)
        assert base.cost is not None and "samples" not in base.cost
        new = replace(gate_run(golden_set(3), policy=CAPPED), cost=timed_cost(3))
        judged = against_baseline(new, base)
        h.record(judged)
        assert h.load(new.run_id).cost == new.cost
    with raw_backend(history_at) as db:
        assert [n for _, n in applied_migrations(db)][6] == "0007_run_timings"
    checks = {c.subject: c for c in judged.checks if c.rule == "cost_increase"}
    assert checks["search latency p99 (ms)"].status == "not applied"
    assert checks["search latency p99 (ms)"].message == (
        f"search latency p99 (ms): run {old_id} kept no per-call timings (recorded before they "
        "were kept), so an increase cannot be told from noise; the next accepted run will serve")
    assert checks["index bytes"].status == "pass" and judged.verdict == "ACCEPT"
