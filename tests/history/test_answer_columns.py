"""Migration ``0008_run_answer_measures``: a run's answer measures stored beside its rank measures
(the run list and the trends read them without loading each run's result), filled in for the runs
an older history holds — on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import pytest

from recallwatch.errors import HistoryError
from recallwatch.history import MIGRATIONS, SCHEMA_VERSION, History
from tests.history.answers_runs import with_answers
from tests.history.helpers import gate_run, golden_set, raw_backend
from tests.history.test_migrations import _applied

COLUMNS = ("faithfulness", "answer_relevance", "correctness", "hallucination_rate")


def _without_0008(location: str) -> None:
    """Make the history at ``location`` one that a recallwatch of 7 migrations wrote."""
    assert MIGRATIONS[7][0] == "0008_run_answer_measures"
    with raw_backend(location) as db:
        for column in COLUMNS:
            db.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        db.execute("DELETE FROM schema_migrations WHERE version = 8")


def test_a_run_records_its_answer_measures_and_a_run_without_answers_none(
        history_at: str) -> None:
    g = golden_set(4)
    judged = with_answers(gate_run(g), 0.75, 0.5, None, 0.25)
    plain = gate_run(g)
    with History(history_at) as h:
        h.record(plain)
        h.record(judged)
        newest, older = h.runs()
    assert (newest.faithfulness, newest.answer_relevance, newest.correctness,
            newest.hallucination_rate) == (0.75, 0.5, None, 0.25)
    assert newest.has_answers and not older.has_answers
    assert newest.to_dict()["faithfulness"] == 0.75
    assert all(older.to_dict()[c] is None for c in COLUMNS)


def test_an_older_history_gets_the_columns_filled_from_its_stored_runs(history_at: str) -> None:
    g = golden_set(3)
    runs = [gate_run(g), with_answers(gate_run(g), 0.9, 0.8, 0.7, 0.1),
            with_answers(gate_run(g), None, 0.6, None, None)]
    with History(history_at) as h:
        for run in runs:
            h.record(run)
    _without_0008(history_at)
    assert len(_applied(history_at)) == SCHEMA_VERSION - 1
    with pytest.raises(HistoryError, match=r"7 migrations.*open it once with a writing command"):
        History(history_at, read_only=True)
    with History(history_at) as h:  # a writing open migrates
        stored = {r.run_id: r for r in h.runs()}
    assert [v for v, _ in _applied(history_at)] == list(range(1, SCHEMA_VERSION + 1))
    plain, full, partial = (stored[r.run_id] for r in runs)
    assert [getattr(plain, c) for c in COLUMNS] == [None] * 4
    assert [getattr(full, c) for c in COLUMNS] == [0.9, 0.8, 0.7, 0.1]
    assert [getattr(partial, c) for c in COLUMNS] == [None, 0.6, None, None]
    with History(history_at, read_only=True) as h:  # and the dashboard reads it again
        assert h.summary(runs[1].run_id).faithfulness == 0.9
