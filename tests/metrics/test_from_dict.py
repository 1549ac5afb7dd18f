"""Qrels and runs from ``{query_id: {doc_id: value}}`` dicts: the columns are the entries listed
one by one, in the dicts' order (queries without entries leave no row), and a value of the
wrong kind is refused naming it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from recallwatch.errors import InputError
from recallwatch.metrics import Qrels, Run

RUN: dict[str, dict[str, Any]] = {
    "q2": {"d9": 0.5, "é-中": 1.25, "d1": 3},
    "empty": {},
    "q1": {"x" * 40: -2.0},
    "q10": {"d1": 0.0, "d2": True},
}


def _rows(nested: dict[str, dict[str, Any]]) -> list[tuple[str, str, Any]]:
    return [(q, d, v) for q, docs in nested.items() for d, v in docs.items()]


def test_run_columns_are_the_entries_in_order() -> None:
    run = Run.from_dict(RUN)
    rows = _rows(RUN)
    assert run.query_ids.to_pylist() == [q for q, _, _ in rows]
    assert run.doc_ids.to_pylist() == [d for _, d, _ in rows]
    assert run.scores.dtype == np.float64
    assert run.scores.tolist() == [float(v) for _, _, v in rows]


def test_qrels_columns_are_the_entries_in_order() -> None:
    qrels = Qrels.from_dict({"b": {"d": 2, "e": 0}, "none": {}, "a": {"d": 1.0}})
    assert qrels.query_ids.to_pylist() == ["b", "b", "a"]
    assert qrels.doc_ids.to_pylist() == ["d", "e", "d"]
    assert qrels.grades.tolist() == [2, 0, 1]


def test_empty_run() -> None:
    run = Run.from_dict({"q": {}})
    assert len(run) == 0 and run.query_ids.to_pylist() == []


@pytest.mark.parametrize(("run", "field", "found"), [
    ({"q": {"d": 1.0}, 7: {"e": 1.0}}, "query id", "7"),
    ({"q": {"d": 1.0, 3: 2.0}}, "doc id", "3"),
    ({"q": {"d": "high"}}, "score", "'high'"),
    ({"q": {"d": float("nan")}}, "score", "nan"),
])
def test_a_value_of_the_wrong_kind_is_named(run: Any, field: str, found: str) -> None:
    with pytest.raises(InputError) as err:
        Run.from_dict(run)
    assert err.value.field == field and found in str(err.value)


def test_a_query_id_without_entries_is_not_read() -> None:
    assert Run.from_dict({"q": {"d": 1.0}, 7: {}}).query_ids.to_pylist() == ["q"]
