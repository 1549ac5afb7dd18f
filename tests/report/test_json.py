"""The gate's JSON report, written one query at a time, is the text of the whole object dumped at
once, on runs whose every field carries hostile text; its query dictionaries are the dataclass's
fields, nothing more or less."""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace

from recallwatch.acceptance.model import QueryResult
from recallwatch.report import to_json

from .helpers import gate_run, golden_set


def _reference(result: object) -> str:
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False,  # type: ignore[attr-defined]
                      default=str) + "\n"


def test_json_written_query_by_query_is_the_whole_object_dumped_at_once() -> None:
    for n, depth in ((1, 0), (8, 3), (8, 8)):
        result = gate_run(golden_set(n), depth)
        text = to_json(result)
        assert text == _reference(result)
        assert json.loads(text)["queries"] == [q.to_dict() for q in result.queries]
    empty = replace(gate_run(golden_set(2)), queries=())
    assert to_json(empty) == _reference(empty)


def test_a_query_dictionary_holds_every_field_as_asdict_does() -> None:
    result = gate_run(golden_set(8), 5)
    for q in result.queries:
        d = q.to_dict()
        assert list(d) == [f.name for f in fields(QueryResult)]
        full = asdict(q)
        assert d["expected"] == list(full["expected"])
        assert d["diagnosis"] == list(full["diagnosis"])
        assert d["top"] == [{"id": i, "score": s} for i, s in q.top]
        for key in ("id", "text", "recall", "noise_threshold", "waiver", "fact_recall"):
            assert d[key] == full[key]
