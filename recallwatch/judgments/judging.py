"""Human judging: a judge's judgments file, agreement between two judges, export and merge.

* :class:`JudgmentLog` keeps one judge's grades in a judgments file
  (:mod:`recallwatch.formats.judging`). Every grade and every undo reads the file, changes this
  judge's lines and replaces the file whole, under a lock on ``FILE.lock`` beside it: a judging
  session killed at any moment leaves the file as it was after the last grade, a new session
  resumes from there, and several judges' pages (several processes) serving one file at once
  never lose each other's grades.
* :func:`judges_agreement` compares two judges on the pairs both graded: Cohen's weighted kappa
  (:mod:`recallwatch.judgments.agreement`) and the list of disagreements to adjudicate.
* :func:`resolve` turns several judgments files into one grade per pair (for qrels), and
  :func:`merge_into_golden` adds the chunks judged relevant to a golden set's expected chunks.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recallwatch._files import RecordsFile
from recallwatch.errors import UsageError
from recallwatch.formats.judging import GRADES
from recallwatch.judgments.agreement import Agreement, Weights, agreement
from recallwatch.judgments.judgments import Judgment, JudgmentSet, read_judgments

__all__ = [
    "DEFAULT_MIN_GRADE",
    "JudgesAgreement",
    "JudgmentLog",
    "judges_agreement",
    "load_judgments",
    "merge_into_golden",
    "now_stamp",
    "resolve",
]

DEFAULT_MIN_GRADE = 2  # "relevant": the grade from which a chunk answers the query
Pair = tuple[str, str]


def now_stamp() -> str:
    """The time now, as judgments and labels record it (UTC, to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class JudgmentLog:
    """One judge's grades in a judgments file (other judges' lines in it are kept as they are).

    The file is the only state: every call reads it, so several logs (threads, or processes
    serving one file) see each other's grades, and every change is a read-modify-write under
    the file's lock."""

    def __init__(self, path: str | os.PathLike[str], judge: str) -> None:
        if not judge.strip():
            raise UsageError("the judge's name must not be empty")
        self.path = Path(path)
        self.judge = judge
        self._file = RecordsFile(self.path, lambda p: [j.to_dict() for j in read_judgments(p)])
        self._file.records()  # an unreadable file fails here, before a page is served

    def grades(self) -> dict[Pair, int]:
        """This judge's current grade of each pair."""
        return {(r["query_id"], r["id"]): int(r["grade"]) for r in self._file.records()
                if r.get("judge") == self.judge}

    def grade(self, query_id: str, chunk_id: str, grade: int) -> dict[str, Any]:
        """Record (or replace) this judge's grade of a pair; returns the record written."""
        if grade not in GRADES:
            raise UsageError(f"a grade is one of {list(GRADES)}, got {grade!r}")
        record = Judgment(query_id, chunk_id, grade, "human", judge=self.judge,
                          at=now_stamp()).to_dict()
        self._file.change(lambda records: [*(r for r in records if not (
            r.get("judge") == self.judge and r["query_id"] == query_id
            and r["id"] == chunk_id)), record])
        return record

    def undo(self) -> dict[str, Any] | None:
        """Take back this judge's last grade (the pair is unjudged again); None if none."""
        return self._file.remove_last(lambda r: r.get("judge") == self.judge)


def load_judgments(paths: Sequence[str | os.PathLike[str]], *,
                   trec_ids: bool = False) -> list[Judgment]:
    """Judgments of several files in order; a line without a judge (qrels) is credited to its
    file's name, so two qrels files can be compared as two judges. ``trec_ids``: they go to a
    TREC file, so an id holding whitespace is refused at its line."""
    out = []
    for path in paths:
        out += [j if j.judge else replace(j, judge=Path(path).name)
                for j in read_judgments(path, trec_ids=trec_ids)]
    return out


@dataclass(frozen=True)
class JudgesAgreement:
    """Two judges on the pairs both graded."""

    judges: tuple[str, str]
    agreement: Agreement | None  # None when they share no pair
    disagreements: list[tuple[str, str, int, int]]  # query id, chunk id, grade a, grade b
    only: dict[str, int]  # pairs only one judge graded

    def to_dict(self) -> dict[str, Any]:
        a, b = self.judges
        return {"judges": list(self.judges),
                "agreement": None if self.agreement is None else self.agreement.to_dict(),
                "disagreements": [{"query_id": q, "id": c, "grades": {a: ga, b: gb}}
                                  for q, c, ga, gb in self.disagreements],
                "only": self.only}


def _latest(judgments: Sequence[Judgment], judge: str) -> dict[Pair, int]:
    return {(j.query_id, j.id): j.grade for j in judgments if j.judge == judge}


def judges_agreement(judgments: Sequence[Judgment], judges: Sequence[str] | None = None, *,
                     weights: Weights = "quadratic", seed: int = 0) -> JudgesAgreement:
    """Cohen's kappa (``weights``: quadratic by default, for ordered grades) between two judges,
    and every pair they grade differently, largest gap first."""
    names = list(dict.fromkeys(j.judge for j in judgments if j.judge))
    chosen = list(judges) if judges else names
    if len(chosen) != 2:
        raise UsageError(f"agreement is between two judges; the judgments name {len(names)}: "
                         f"{', '.join(names) or 'none'} (choose two with --judge A --judge B)")
    unknown = [n for n in chosen if n not in names]
    if unknown:
        raise UsageError(f"no judgments by {unknown[0]!r}; the judges are {', '.join(names)}")
    a, b = chosen[0], chosen[1]
    ga, gb = _latest(judgments, a), _latest(judgments, b)
    common = [p for p in ga if p in gb]
    measured = None
    if common:
        measured = agreement([ga[p] for p in common], [gb[p] for p in common], weights=weights,
                             categories=sorted(set(GRADES) | set(ga.values()) | set(gb.values())),
                             rater_a=a, rater_b=b, seed=seed)
    differ = sorted(((p[0], p[1], ga[p], gb[p]) for p in common if ga[p] != gb[p]),
                    key=lambda d: (-abs(d[2] - d[3]), d[0], d[1]))
    return JudgesAgreement((a, b), measured, differ,
                           {a: len(set(ga) - set(gb)), b: len(set(gb) - set(ga))})


def resolve(judgments: Sequence[Judgment]) -> tuple[JudgmentSet, int]:
    """One grade per pair, the last judgment read winning (pass an adjudication file last), and
    how many pairs had different grades that were overridden this way."""
    final: dict[Pair, Judgment] = {}
    seen: dict[Pair, set[int]] = {}
    for j in judgments:
        final[(j.query_id, j.id)] = j
        seen.setdefault((j.query_id, j.id), set()).add(j.grade)
    sources = sorted({j.source for j in final.values()})
    out = sorted(final.values(), key=lambda j: (j.query_id, -j.grade, j.id))
    return (JudgmentSet(out, "+".join(sources) or "human"),
            sum(1 for grades in seen.values() if len(grades) > 1))


def merge_into_golden(golden: dict[str, Any], grades: dict[Pair, int], *,
                      min_grade: int = DEFAULT_MIN_GRADE) -> tuple[dict[str, Any], dict[str, Any]]:
    """A copy of a golden set (as a mapping) where each query's expected chunks gain the chunks
    judged ``min_grade`` or better, and what changed. Nothing is removed: an expected chunk
    judged below ``min_grade`` is listed for a person to decide."""
    if min_grade not in GRADES or min_grade == 0:
        raise UsageError(f"--min-grade must be 1, 2 or 3, got {min_grade}")
    queries = {str(q["id"]): q for q in golden["queries"]}
    added: dict[str, list[str]] = {}
    contested: list[dict[str, Any]] = []
    outside = 0
    new_queries = []
    for q in golden["queries"]:
        q = dict(q)
        expected = list(q["expected"])
        plain = {e for e in expected if isinstance(e, str)}
        for (qid, cid), g in sorted(grades.items()):
            if qid != str(q["id"]):
                continue
            if g >= min_grade and cid not in plain:
                expected.append(cid)
                added.setdefault(qid, []).append(cid)
            elif g < min_grade and cid in plain:
                contested.append({"query_id": qid, "id": cid, "grade": g})
        q["expected"] = expected
        new_queries.append(q)
    outside = sum(1 for (qid, _), g in grades.items() if qid not in queries and g >= min_grade)
    merged = {**golden, "queries": new_queries}
    report = {"added": added, "chunks_added": sum(len(v) for v in added.values()),
              "queries_changed": len(added), "expected_judged_below": contested,
              "relevant_for_queries_not_in_the_set": outside, "min_grade": min_grade}
    return merged, report
