"""Judging files: the queue of (query, chunk) pairs to grade, and the judgments people make.

Both are JSON Lines, one object per line, UTF-8.

A **judging queue** line is one pair to grade, with what a person needs to decide::

    {"query_id": "q7", "query": "How is the 2025 income tax computed?", "id": "legal_045",
     "text": "Article 45 …", "meta": {"doc_id": "irpf", "domain": "legal"},
     "found_by": {"store": 3, "bm25": 1}}

``found_by`` names each system whose top results held the chunk, with its 1-based rank there.

A **judgments file** line is one grade, 0–3, and who gave it when::

    {"query_id": "q7", "id": "legal_045", "grade": 2, "source": "human", "judge": "ana",
     "at": "2026-12-01T09:14:03Z"}

Grades: 0 not relevant, 1 related (on the topic, does not answer), 2 relevant (answers in part),
3 highly relevant (answers it). ``source`` says what made the label (``human``,
``click-model:pbm``, ``llm:<model>``). A later line for the same query, chunk and judge replaces
an earlier one. Anywhere recallwatch reads judgments it also reads TREC qrels
(``qid 0 docid grade``), which carry grades but no judge.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch._files import open_input
from recallwatch.errors import InputError
from recallwatch.formats.fields import (
    bounded,
    check_keys,
    check_trec_id,
    line_of,
    shown,
    text_id,
)
from recallwatch.formats.structured import iter_jsonl

__all__ = [
    "GRADES",
    "GRADE_WORDS",
    "JUDGMENT_KEYS",
    "QueueItem",
    "judged_pairs",
    "judgments_text",
    "read_judgment_records",
    "read_queue",
    "write_queue",
]

GRADES = (0, 1, 2, 3)
GRADE_WORDS = {0: "not relevant", 1: "related", 2: "relevant", 3: "highly relevant"}

_QUEUE_KEYS = {"query_id", "query", "id", "text", "meta", "found_by", "grades"}
# Every key a Judgment writes (click-model evidence included), plus who judged it and when.
JUDGMENT_KEYS = {"query_id", "id", "grade", "source", "judge", "at", "relevance", "impressions",
                 "clicks", "effective_examinations", "ci"}


@dataclass(frozen=True)
class QueueItem:
    """One (query, chunk) pair to grade."""

    query_id: str
    query: str
    id: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    found_by: dict[str, int] = field(default_factory=dict)
    grades: dict[str, int] = field(default_factory=dict)  # adjudication: each judge's grade

    @property
    def pair(self) -> tuple[str, str]:
        return self.query_id, self.id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query_id": self.query_id, "query": self.query, "id": self.id,
                               "text": self.text, "meta": self.meta, "found_by": self.found_by}
        if self.grades:
            out["grades"] = self.grades
        return out


def _text(obj: Mapping[str, Any], key: str, source: Path, record: str | None,
          *, empty: bool = False) -> str:
    value = obj.get(key)
    if empty and value == "":
        return ""
    text = text_id(value)
    if text is None:
        raise InputError(source=source, line=line_of(obj), record=record, field=key,
                         expected="a non-empty string", found=shown(value))
    return text


def _int_map(obj: Mapping[str, Any], key: str, source: Path, record: str,
             lo: int, hi: int) -> dict[str, int]:
    value = obj.get(key, {})
    if not isinstance(value, dict):
        raise InputError(source=source, line=line_of(obj), record=record, field=key,
                         expected="an object of names to integers", found=shown(value))
    return {str(k): bounded(v, lo, hi, source=source, line=line_of(obj), record=record,
                            field=f"{key}.{k}") for k, v in value.items()}


def read_queue(path: str | os.PathLike[str]) -> list[QueueItem]:
    """The pairs of a judging queue, in file order; a pair listed twice is an error."""
    p = Path(path)
    items: list[QueueItem] = []
    first: dict[tuple[str, str], int | None] = {}
    for obj in iter_jsonl(p):
        qid = _text(obj, "query_id", p, None)
        check_keys(obj, _QUEUE_KEYS, source=p, record=qid)
        cid = _text(obj, "id", p, qid)
        record = f"{qid} / {cid}"
        if (qid, cid) in first:
            raise InputError("pair listed twice", source=p, line=line_of(obj), record=record,
                             hint=f"first at line {first[(qid, cid)]}")
        first[(qid, cid)] = line_of(obj)
        meta = obj.get("meta", {})
        if not isinstance(meta, dict):
            raise InputError(source=p, line=line_of(obj), record=record, field="meta",
                             expected="an object", found=shown(meta))
        items.append(QueueItem(
            query_id=qid, query=_text(obj, "query", p, record, empty=True), id=cid,
            text=_text(obj, "text", p, record, empty=True), meta=meta,
            found_by=_int_map(obj, "found_by", p, record, 1, 10**9),
            grades=_int_map(obj, "grades", p, record, 0, 3)))
    return items


def write_queue(path: str | os.PathLike[str], items: Iterable[QueueItem]) -> None:
    """Write a judging queue whole (a reader never sees half of it)."""
    from recallwatch._files import write_atomic

    write_atomic(path, "".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\n"
                               for i in items))


def judgments_text(records: Iterable[Mapping[str, Any]]) -> str:
    """Judgment records as the lines of a judgments file."""
    return "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in records)


def read_judgment_records(path: str | os.PathLike[str], *,
                          trec_ids: bool = False) -> list[dict[str, Any]]:
    """The records of a judgments file (JSON Lines), validated, in file order; a TREC qrels file
    gives records with ``source: "qrels"`` and no judge. An empty file has no records.
    ``trec_ids``: the judgments go to a TREC file, so an id holding whitespace is refused at its
    line."""
    p = Path(path)
    with open_input(p, "a judgments file", gzipped=False) as stream:
        head = stream.read(4096).lstrip()
    if not head:
        return []
    if not head.startswith(b"{"):
        return _qrels_records(p)
    out = []
    for obj in iter_jsonl(p):
        qid = _text(obj, "query_id", p, None)
        check_keys(obj, JUDGMENT_KEYS, source=p, record=qid)
        cid = _text(obj, "id", p, qid)
        record = f"{qid} / {cid}"
        if trec_ids:
            for key, value in (("query_id", qid), ("id", cid)):
                check_trec_id(value, key, source=p, line=line_of(obj), record=record)
        rec = {k: v for k, v in obj.items() if k in JUDGMENT_KEYS}
        rec.update(query_id=qid, id=cid,
                   grade=bounded(obj.get("grade"), 0, 3, source=p, line=line_of(obj),
                                 record=record, field="grade"),
                   source=_text(obj, "source", p, record) if "source" in obj else "human")
        for key in ("judge", "at"):
            if key in obj:
                rec[key] = _text(obj, key, p, record)
        out.append(rec)
    return out


def _qrels_records(p: Path) -> list[dict[str, Any]]:
    from recallwatch.formats.trec import read_qrels

    table = read_qrels(p)
    return [{"query_id": q, "id": d, "grade": int(g), "source": "qrels"}
            for q, d, g in zip(table.query_ids.to_pylist(), table.doc_ids.to_pylist(),
                               table.values.tolist())]


def judged_pairs(paths: Iterable[str | os.PathLike[str]]) -> dict[tuple[str, str], int]:
    """{(query id, chunk id): grade} over judgments files or qrels (a later grade wins)."""
    out: dict[tuple[str, str], int] = {}
    for path in paths:
        for r in read_judgment_records(path):
            out[(r["query_id"], r["id"])] = int(r["grade"])
    return out
