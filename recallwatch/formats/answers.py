"""The two files of answer-level evaluation, JSON Lines, one record a line.

**Answers** (``gate --answers FILE``): what a RAG assistant answered to the golden set's
questions, and from which context::

    {"query_id": "modelo_190", "answer": "Se presenta del 1 al 31 de enero.",
     "contexts": ["silver_finanzas_121", {"text": "a passage the assistant was given"}]}

``contexts`` is optional: without it the answer is judged against the chunks the gate retrieved
for the query (its top K). An entry is a chunk id of the index, or ``{"text": …}`` for a passage
that is not one.

**Labelled answers** (``gate --answer-labels FILE``): answers people have judged, which every
answer judge is measured against before its figures are used::

    {"id": "a1", "question": "…", "answer": "…", "contexts": ["passage", …],
     "faithful": true, "relevant": true,
     "correct": false, "reference": "the right answer", "facts": ["a fact it must state"]}

``faithful``: every statement of the answer is backed by the contexts; ``relevant``: the answer
addresses the question; ``correct`` (optional, with ``reference`` or ``facts``): it agrees with
the right answer; ``judge`` and ``at`` (optional, written by ``label answers``): who labelled it
and when. Each record is read whole; an error names the file, the line, the field, what was
expected and what was found.

**Answers to label** (``label answers FILE``): the same records without their labels
(``faithful``, ``relevant``, ``correct``, ``judge``, ``at``).

``gate --generator SPEC --answers-out FILE`` writes the answers the generator gave from the
retrieved chunks in the answers format (:func:`write_answers`), so ``gate --answers`` judges them
again and ``label answers FILE --golden GOLDEN`` labels them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallwatch.errors import InputError
from recallwatch.formats.fields import check_keys, line_of, shown, text_id
from recallwatch.formats.structured import iter_jsonl

__all__ = ["AnswerRecord", "AnswerToLabel", "Context", "LabelledAnswer", "read_answers",
           "read_answers_to_label", "read_labelled_answers", "write_answers"]

_ANSWER_KEYS = {"query_id", "answer", "contexts"}
_TO_LABEL_KEYS = {"id", "question", "answer", "contexts", "reference", "facts"}
# "judge" and "at": who labelled the answer and when (written by ``label answers``; not read)
_LABEL_KEYS = _TO_LABEL_KEYS | {"faithful", "relevant", "correct", "judge", "at"}


@dataclass(frozen=True)
class Context:
    """One passage an answer was given: a chunk of the index (``id``) or a text (``text``)."""

    id: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class AnswerRecord:
    query_id: str
    answer: str
    contexts: tuple[Context, ...] | None  # None: the gate's retrieved top K
    source: str
    line: int | None


@dataclass(frozen=True)
class LabelledAnswer:
    id: str
    question: str
    answer: str
    contexts: tuple[str, ...]
    faithful: bool
    relevant: bool
    correct: bool | None = None
    reference: str | None = None
    facts: tuple[str, ...] = ()
    line: int | None = None


@dataclass(frozen=True)
class AnswerToLabel:
    """An answer for people to label: what a labelled answer holds before its labels."""

    id: str
    question: str
    answer: str
    contexts: tuple[str, ...]
    reference: str | None = None
    facts: tuple[str, ...] = ()
    source: str = ""
    line: int | None = None

    @property
    def has_truth(self) -> bool:
        """Whether its correctness can be labelled (a reference or facts to compare with)."""
        return self.reference is not None or bool(self.facts)

    def to_dict(self) -> dict[str, Any]:
        """As a labelled answer's record begins (the labels come after)."""
        out: dict[str, Any] = {"id": self.id, "question": self.question, "answer": self.answer,
                               "contexts": list(self.contexts)}
        if self.reference is not None:
            out["reference"] = self.reference
        if self.facts:
            out["facts"] = list(self.facts)
        return out


def _text(obj: Mapping[str, Any], key: str, source: Path, record: str | None,
          *, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(source=source, line=line_of(obj), record=record, field=key,
                         expected="a non-empty string", found=shown(value))
    return value


def _flag(obj: Mapping[str, Any], key: str, source: Path, record: str | None,
          *, required: bool = True) -> bool | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, bool):
        raise InputError(source=source, line=line_of(obj), record=record, field=key,
                         expected="true or false", found=shown(value))
    return value


def _contexts(obj: Mapping[str, Any], source: Path, record: str) -> tuple[Context, ...] | None:
    raw = obj.get("contexts")
    if raw is None:
        return None
    line = line_of(obj)
    if not isinstance(raw, list) or not raw:
        raise InputError(source=source, line=line, record=record, field="contexts",
                         expected="a non-empty list of chunk ids or {\"text\": …} objects "
                         "(or no contexts key: the retrieved chunks)", found=shown(raw))
    out = []
    for i, item in enumerate(raw):
        where = f"contexts[{i}]"
        if isinstance(item, dict):
            check_keys(item, {"text"}, source=source, record=record)
            text = item.get("text")
            if not isinstance(text, str) or not text.strip():
                raise InputError(source=source, line=line, record=record, field=f"{where}.text",
                                 expected="a non-empty string", found=shown(text))
            out.append(Context(text=text))
            continue
        cid = text_id(item)
        if cid is None:
            raise InputError(source=source, line=line, record=record, field=where,
                             expected="a chunk id or {\"text\": …}", found=shown(item))
        out.append(Context(id=cid))
    return tuple(out)


def read_answers(path: str | Path) -> dict[str, AnswerRecord]:
    """Answers by query id, in file order. A query answered twice is an error naming both
    lines."""
    p = Path(path)
    out: dict[str, AnswerRecord] = {}
    for obj in iter_jsonl(p):
        line = line_of(obj)
        qid = text_id(obj.get("query_id"))
        if qid is None:
            raise InputError(source=p, line=line, field="query_id",
                             expected="the id of a query of the golden set",
                             found=shown(obj.get("query_id")))
        check_keys(obj, _ANSWER_KEYS, source=p, record=qid)
        if qid in out:
            raise InputError(source=p, line=line, record=qid, field="query_id",
                             expected=f"one answer per query (it is answered on line "
                             f"{out[qid].line} already)", found=qid)
        answer = str(_text(obj, "answer", p, qid))
        out[qid] = AnswerRecord(qid, answer, _contexts(obj, p, qid), str(p), line)
    return out


def write_answers(path: str | Path, answers: Iterable[tuple[str, str, list[Any]]]) -> int:
    """Write ``(query_id, answer, contexts)`` records as an answers file (contexts: chunk ids,
    or ``{"text": …}`` for a passage that is not one), replacing ``path`` whole; how many."""
    from recallwatch._files import write_atomic

    lines = [json.dumps({"query_id": qid, "answer": text, "contexts": list(contexts)},
                        ensure_ascii=False) + "\n" for qid, text, contexts in answers]
    write_atomic(path, "".join(lines))
    return len(lines)


def _answer_fields(obj: dict[str, Any], p: Path, keys: set[str],
                   seen: dict[str, int | None]) -> tuple[str | None, dict[str, Any]]:
    """The record name (None: its line says where) and the fields a labelled answer and an
    answer to label share, checked: ``id`` (default ``line N``; each once), ``question``,
    ``answer``, ``contexts`` (texts), ``reference`` and ``facts``."""
    line = line_of(obj)
    given = obj.get("id")
    rid = text_id(given) if given is not None else f"line {line}"
    if rid is None:
        raise InputError(source=p, line=line, field="id", expected="a non-empty id",
                         found=shown(given))
    record = rid if given is not None else None  # the line already says where
    check_keys(obj, keys, source=p, record=record)
    if rid in seen:
        raise InputError(source=p, line=line, record=record, field="id",
                         expected=f"each id once (first on line {seen[rid]})", found=rid)
    seen[rid] = line
    contexts = obj.get("contexts")
    if not isinstance(contexts, list) or not contexts or not all(
            isinstance(c, str) and c.strip() for c in contexts):
        raise InputError(source=p, line=line, record=record, field="contexts",
                         expected="a non-empty list of the passages' texts",
                         found=shown(contexts))
    facts = obj.get("facts", [])
    if not isinstance(facts, list) or not all(isinstance(f, str) and f.strip()
                                              for f in facts):
        raise InputError(source=p, line=line, record=record, field="facts",
                         expected="a list of texts", found=shown(facts))
    return record, {"id": rid, "question": str(_text(obj, "question", p, record)),
                    "answer": str(_text(obj, "answer", p, record)), "contexts": tuple(contexts),
                    "reference": _text(obj, "reference", p, record, required=False),
                    "facts": tuple(facts), "line": line}


def read_labelled_answers(path: str | Path) -> list[LabelledAnswer]:
    """Answers people judged, in file order (an ``id`` defaults to ``line N``)."""
    p = Path(path)
    out: list[LabelledAnswer] = []
    seen: dict[str, int | None] = {}
    for obj in iter_jsonl(p):
        record, fields = _answer_fields(obj, p, _LABEL_KEYS, seen)
        correct = _flag(obj, "correct", p, record, required=False)
        if correct is not None and fields["reference"] is None and not fields["facts"]:
            raise InputError(source=p, line=fields["line"], record=record, field="correct",
                             expected="a reference or facts to judge correctness against",
                             found="<neither>",
                             hint="add \"reference\": the right answer, or \"facts\": [...]")
        out.append(LabelledAnswer(
            **fields, faithful=bool(_flag(obj, "faithful", p, record)),
            relevant=bool(_flag(obj, "relevant", p, record)), correct=correct))
    return out


def read_answers_to_label(path: str | Path) -> list[AnswerToLabel]:
    """Answers for people to label (``label answers FILE``), in file order: the records
    of a labelled answers file without their labels (an ``id`` defaults to ``line N``)."""
    p = Path(path)
    seen: dict[str, int | None] = {}
    out = []
    for obj in iter_jsonl(p):
        if "query_id" in obj and "question" not in obj:
            raise InputError(source=p, line=line_of(obj), field="query_id",
                             expected="an answer to label: {id, question, answer, contexts: "
                             "[the passages' texts]}",
                             found="<an answer of the gate's answers file>",
                             hint="to label the answers of a gate answers file, give its golden "
                             "set with --golden (and --store or --corpus for the chunks it "
                             "names)")
        _, fields = _answer_fields(obj, p, _TO_LABEL_KEYS, seen)
        out.append(AnswerToLabel(**fields, source=str(p)))
    return out
