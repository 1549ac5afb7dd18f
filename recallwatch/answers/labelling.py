"""Answers for people to label, and one person's labels of them (``label answers FILE``).

The answers come one of two ways:

* a file of answers to label (:func:`~recallwatch.formats.answers.read_answers_to_label`): each
  record holds its question, its answer, its contexts' texts and, optionally, the reference or
  the facts it is checked against — any answers, not only to the golden set's questions;
* the gate's answers file (``gate --answers FILE``) with the golden set
  (:func:`answers_from_gate_file`): the question, the reference and the facts (the quotes of its
  content anchors, as the gate reads them) come from the golden query, and the contexts' chunk
  ids are read from the store or the corpus. An answer without ``contexts`` is refused: the
  labels are about the passages the answer was given, and this step searches nothing.

:class:`AnswerLabels` keeps one person's labels in a labelled answers file, in the format
``gate --answer-labels`` reads (:func:`~recallwatch.formats.answers.read_labelled_answers`),
each label a whole record written under the file's lock (:class:`~recallwatch._files.RecordsFile`):
a session killed at any moment leaves the file as after its last label, and a new one resumes,
skipping every answer the file labels already.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recallwatch._files import RecordsFile
from recallwatch.answers.gate import ChunkReader, check_contexts, check_query_ids
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.answers import (
    AnswerToLabel,
    read_answers,
    read_answers_to_label,
    read_labelled_answers,
)
from recallwatch.formats.fields import shown, text_id
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.structured import LINE_KEY, iter_jsonl
from recallwatch.judgments.judging import now_stamp

__all__ = ["LABELS", "AnswerLabels", "answers_from_gate_file", "label_problem",
           "open_answers_to_label"]

LABELS = ("faithful", "relevant", "correct")


def open_answers_to_label(path: str | Path, *, golden: GoldenSet | None = None,
                          chunks: ChunkReader | None = None) -> list[AnswerToLabel]:
    """The answers of ``path``: a file of answers to label, or, with ``golden``, the gate's
    answers file (see the module)."""
    if golden is not None:
        return answers_from_gate_file(path, golden, chunks)
    if chunks is not None:
        raise UsageError("--store and --corpus read the chunks a gate answers file names: give "
                         "its golden set with --golden too")
    return read_answers_to_label(path)


def answers_from_gate_file(path: str | Path, golden: GoldenSet,
                           chunks: ChunkReader | None) -> list[AnswerToLabel]:
    """The answers of a gate answers file, with their questions, references and facts from
    ``golden`` and their chunks' texts from ``chunks``."""
    records = read_answers(path)
    check_query_ids(records, golden)
    for r in records.values():
        if r.contexts is None:
            raise InputError(source=r.source, line=r.line, record=r.query_id, field="contexts",
                             expected="the passages the answer was given (chunk ids or "
                             "{\"text\": …}): its labels are about them, and label answers "
                             "searches nothing to find the retrieved ones", found="<none>")
    named = list(dict.fromkeys(c.id for r in records.values() for c in r.contexts or ()
                               if c.id is not None))
    if named and chunks is None:
        raise UsageError(f"{path} names chunks by id ({named[0]!r} first): give --store URI or "
                         "--corpus FILE to read their texts")
    found = {} if not named or chunks is None else {
        cid: c.text for cid, c in chunks(named).items()}
    check_contexts(records.values(), found)
    by_id = {q.id: q for q in golden.queries}
    return [AnswerToLabel(
        r.query_id, by_id[r.query_id].text, r.answer,
        tuple(found[c.id] if c.id is not None else str(c.text) for c in r.contexts or ()),
        by_id[r.query_id].reference, tuple(a.quote for a in by_id[r.query_id].anchors),
        source=r.source, line=r.line) for r in records.values()]


def label_problem(item: AnswerToLabel, faithful: Any, relevant: Any, correct: Any) -> str | None:
    """What is wrong with these labels of ``item`` (None: nothing)."""
    if not isinstance(faithful, bool) or not isinstance(relevant, bool):
        return "faithful and relevant must be true or false"
    if item.has_truth and not isinstance(correct, bool):
        return (f"answer {item.id!r} has a reference or facts: correct must be true or false")
    if not item.has_truth and correct is not None:
        return (f"answer {item.id!r} has no reference and no facts to judge correctness "
                "against: correct must be null")
    return None


def _records(path: Path) -> list[dict[str, Any]]:
    """A labelled answers file's records as written, once the file reads as one."""
    read_labelled_answers(path)  # an error names the line
    return [{k: v for k, v in obj.items() if k != LINE_KEY} for obj in iter_jsonl(path)]


def _id(record: dict[str, Any]) -> str | None:
    return text_id(record.get("id"))


class AnswerLabels:
    """``judge``'s labels of ``items`` in the labelled answers file at ``path`` (the file's
    other records are kept as they are)."""

    def __init__(self, path: str | os.PathLike[str], judge: str,
                 items: Sequence[AnswerToLabel]) -> None:
        if not judge.strip():
            raise UsageError("the labeller's name must not be empty")
        self.path = Path(path)
        self.judge = judge
        self.items = {i.id: i for i in items}
        self._file = RecordsFile(self.path, _records)
        self._check_labelled()  # an unreadable file, or another answer under an id, fails now

    def _check_labelled(self) -> None:
        if not self._file.records():
            return
        for r in read_labelled_answers(self.path):
            item = self.items.get(r.id)
            if item is not None and (r.question, r.answer) != (item.question, item.answer):
                raise InputError(
                    source=self.path, line=r.line, record=r.id, field="answer",
                    expected=f"the answer {item.source} gives for {r.id!r} (line {item.line}): "
                    "this file labels another answer under the same id", found=shown(r.answer),
                    hint="save these labels in another file (--out), or give the answers "
                    "other ids")

    def labels(self) -> dict[str, dict[str, bool | None]]:
        """The labels of each answer of ``items`` the file labels already (by anyone)."""
        return {rid: {k: r.get(k) for k in LABELS} for r in self._file.records()
                if (rid := _id(r)) in self.items}

    def label(self, item_id: str, faithful: bool, relevant: bool,
              correct: bool | None) -> dict[str, Any]:
        """Record (or replace) the labels of an answer of ``items``; returns the record."""
        item = self.items.get(item_id)
        if item is None:
            raise UsageError(f"{item_id!r} is not an answer to label here")
        problem = label_problem(item, faithful, relevant, correct)
        if problem is not None:
            raise UsageError(problem)
        base = item.to_dict()
        truth: dict[str, Any] = {k: base.pop(k) for k in ("reference", "facts") if k in base}
        record: dict[str, Any] = {**base, "faithful": faithful, "relevant": relevant,
                  **({"correct": correct} if correct is not None else {}), **truth,
                  "judge": self.judge, "at": now_stamp()}
        self._file.change(lambda records: [*(r for r in records if _id(r) != item_id), record])
        return record

    def undo(self) -> dict[str, Any] | None:
        """Take back this labeller's last label of an answer of ``items``; None if none."""
        return self._file.remove_last(
            lambda r: r.get("judge") == self.judge and _id(r) in self.items)
