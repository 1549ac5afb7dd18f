"""Experiments recorded in the history, on SQLite and PostgreSQL: the results text comes back
byte for byte, the list is newest first with the figures the dashboard shows, and an unknown id
is refused by name."""

from __future__ import annotations

import hashlib
import json

import pytest

from recallwatch.errors import UsageError
from recallwatch.history import (
    History,
    experiment_results,
    record_experiment,
    recorded_experiments,
)


def _results(plan: str, winner: str, confirmed: bool | None) -> str:
    doc = {"schema": "recallwatch.experiment/1", "plan": plan, "base": "dense",
           "winner": winner, "chosen_on": "tune" if confirmed is not None else "all",
           "confirmed": confirmed, "summary": ["línea « ñ » 😀"],
           "variants": [{"name": "dense", "metrics": {"mean_quality": 0.1 + 0.2}},
                        {"name": winner, "metrics": {"mean_quality": 2**-1074}}]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def test_recorded_experiments_come_back_whole_newest_first(history_at: str) -> None:
    first, second = _results("a.yaml", "hybrid", True), _results("b.yaml", "bm25 <b>", None)
    with History(history_at) as h:
        one = record_experiment(h, first, out_dir="/runs/a")
        two = record_experiment(h, second, out_dir="/runs/b c")
    with History(history_at, read_only=True) as h:
        listed = recorded_experiments(h)
        assert [r.id for r in listed] == [two, one]
        newest = listed[0]
        assert (newest.plan, newest.out_dir, newest.base, newest.winner, newest.chosen_on,
                newest.confirmed, newest.variants) == ("b.yaml", "/runs/b c", "dense",
                                                       "bm25 <b>", "all", None, 2)
        assert listed[1].confirmed is True
        assert newest.digest == hashlib.sha256(second.encode("utf-8")).hexdigest()
        record, doc = experiment_results(h, one)
        assert record == listed[1]
        assert json.dumps(doc, indent=2, ensure_ascii=False) + "\n" == first
        assert [r.id for r in recorded_experiments(h, limit=1)] == [two]
        with pytest.raises(UsageError, match="no recorded experiment 99"):
            experiment_results(h, 99)
