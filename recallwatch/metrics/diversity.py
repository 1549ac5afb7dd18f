"""α-nDCG@k: how well a ranking covers the different needs (subtopics) behind one query.

Judgments come as TREC diversity qrels, ``qid subtopic docid grade``: the column trec_eval
ignores names the subtopic, and a document may be relevant to several subtopics of its query.
A document's gain at rank r is the sum, over the subtopics it is relevant to (grade >= 1), of
(1 - α) raised to the number of documents above r already relevant to that subtopic, so a
second document on a need already met earns less; α-DCG@k sums gain / log2(1 + rank) over the
top k, and α-nDCG@k divides it by the α-DCG@k of an ideal ranking built greedily (the best next
document each time, as ndeval does; finding the true ideal is NP-hard). Ranking as everywhere:
score descending, then document id descending. A judged query absent from the run scores 0.

``evaluate`` computes the ``alpha_nDCG@k`` measure from subtopic judgments given beside the plain
ones (``recallwatch eval/compare --subtopics FILE``); :func:`read_judgments` reads both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch._files import capped_lines, open_input
from recallwatch.errors import InputError, UsageError
from recallwatch.metrics._data import Qrels, Run
from recallwatch.metrics._measure import REDUNDANCY, Family, Measure, register

if TYPE_CHECKING:
    from recallwatch.metrics._ranking import Ranking

__all__ = ["ALPHA_NDCG", "SubtopicQrels", "alpha_ndcg", "read_judgments"]

_FORMAT = "qid subtopic docid grade"


@dataclass(frozen=True)
class SubtopicQrels:
    """query id -> document id -> the subtopics it is relevant to (grade >= 1); ``grades``
    keeps each judged document's highest grade over its subtopics (:meth:`to_qrels`)."""

    relevant: Mapping[str, Mapping[str, frozenset[str]]]
    grades: Mapping[str, Mapping[str, int]] = field(default_factory=dict, compare=False)
    source: str | None = field(default=None, compare=False)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, str, int]], source: str | None = None
                  ) -> SubtopicQrels:
        """Rows ``(query id, subtopic, document id, grade)``."""
        out: dict[str, dict[str, set[str]]] = {}
        grades: dict[str, dict[str, int]] = {}
        for qid, subtopic, doc, grade in rows:
            docs = out.setdefault(qid, {})
            judged = grades.setdefault(qid, {})
            judged[doc] = max(grade, judged.get(doc, grade))
            if grade >= 1:
                docs.setdefault(doc, set()).add(subtopic)
        return cls({q: {d: frozenset(s) for d, s in docs.items()} for q, docs in out.items()},
                   grades, source)

    def to_qrels(self) -> Qrels:
        """Plain judgments: each judged document with its highest grade over its subtopics (the
        queries the subtopic measures score; no other measure reads them)."""
        plain = Qrels.from_dict(self.grades)
        return Qrels(plain.query_ids, plain.doc_ids, plain.grades, self.source)

    @classmethod
    def from_trec(cls, path: str | PathLike[str]) -> SubtopicQrels:
        """A TREC diversity qrels file: ``qid subtopic docid grade`` per line (``#`` comments),
        plain or gzip."""
        rows = []
        seen: dict[tuple[str, str, str], int] = {}
        with open_input(path, f"subtopic judgments ({_FORMAT})") as stream:
            for n, raw in enumerate(capped_lines(stream, path), 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(source=str(path), line=n, field="line",
                                     expected="UTF-8 text", found="<bytes that are not UTF-8>"
                                     ) from None
                fields = line.split()
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) != 4:
                    raise InputError(source=str(path), line=n, field="line",
                                     expected=f"4 fields: {_FORMAT}",
                                     found=f"{len(fields)} fields")
                qid, subtopic, doc, grade = fields
                try:
                    value = int(grade)
                except ValueError:
                    raise InputError(source=str(path), line=n, field="grade",
                                     expected="an integer", found=grade) from None
                key = (qid, subtopic, doc)
                if key in seen:
                    raise InputError(source=str(path), line=n, record=qid, field="docid",
                                     expected="one judgment per query, subtopic and document",
                                     found=f"{doc} for subtopic {subtopic} again (first on "
                                     f"line {seen[key]})")
                seen[key] = n
                rows.append((qid, subtopic, doc, value))
        if not rows:
            raise InputError(source=str(path), field="file", expected="at least one judgment",
                             found="none")
        return cls.from_rows(rows, source=str(path))


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(r + 1) for r, g in enumerate(gains, 1))


def _gains(ranked: Sequence[frozenset[str]], alpha: float) -> list[float]:
    seen: dict[str, int] = {}
    out = []
    for subtopics in ranked:
        out.append(sum((1 - alpha) ** seen.get(s, 0) for s in subtopics))
        for s in subtopics:
            seen[s] = seen.get(s, 0) + 1
    return out


def _ideal(docs: Mapping[str, frozenset[str]], k: int, alpha: float) -> list[float]:
    """Gains of the greedy ideal ranking: each step takes the document of largest gain given
    the ones already placed (ties: the document id that sorts last, as ndeval; the tie decides
    which subtopics later steps still find new, so it changes the ideal's gain)."""
    left = dict(sorted(docs.items(), reverse=True))
    seen: dict[str, int] = {}
    gains: list[float] = []
    while left and len(gains) < k:
        best, gain = max(((d, sum((1 - alpha) ** seen.get(s, 0) for s in subs))
                          for d, subs in left.items()), key=lambda t: t[1])
        gains.append(gain)
        for s in left.pop(best):
            seen[s] = seen.get(s, 0) + 1
    return gains


def alpha_ndcg(qrels: SubtopicQrels, run: Mapping[str, Mapping[str, float]], k: int,
               alpha: float = 0.5) -> dict[str, float]:
    """α-nDCG@k of every judged query (sorted by id); 0 for a query absent from the run or
    without a relevant document."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"alpha-nDCG: the cut-off k must be an integer >= 1, found {k!r}")
    if not 0.0 <= alpha < 1.0:
        raise UsageError(f"alpha-nDCG: alpha must be in [0, 1), found {alpha!r}")
    out: dict[str, float] = {}
    for qid in sorted(qrels.relevant):
        docs = qrels.relevant[qid]
        scores = run.get(qid, {})
        order = sorted(scores, key=lambda d: (scores[d], d.encode()), reverse=True)[:k]
        ideal = _dcg(_ideal(docs, k, alpha))
        got = _dcg(_gains([docs.get(d, frozenset()) for d in order], alpha))
        out[qid] = got / ideal if ideal > 0 else 0.0
    return out


def _needs_subtopics(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    raise UsageError(f"{m} needs subtopic judgments (a file of lines '{_FORMAT}'), which plain "
                     "judgments do not hold: give that file with --subtopics FILE to recallwatch "
                     "eval or compare")


ALPHA_NDCG = register(
    Family(
        name="alpha_nDCG",
        title="Diversity over subtopics",
        definition="How well the top k covers the different needs (subtopics) behind a query, "
        "from subtopic judgments (`--subtopics FILE`, lines `qid subtopic docid grade`; see "
        "[Subtopic judgments](#subtopic-judgments-for-alpha_ndcg)). A document's gain at rank r "
        "is the sum, over the subtopics it is relevant to (grade >= 1), of (1 - alpha) raised "
        "to the number of documents above r already relevant to that subtopic, so a second "
        "document on a need already met earns less; alpha-DCG@k sums gain / log2(1 + rank) over "
        "the top k, and alpha-nDCG@k divides it by the alpha-DCG@k of an ideal ranking built "
        "greedily (the best next document each time; the true ideal is too costly to find). A "
        "query without subtopic judgments, or without a relevant document, scores 0.",
        cutoff="required",
        params=(REDUNDANCY,),
        trec_eval="none: TREC's diversity evaluator `ndeval` prints it as `alpha-nDCG@k` "
        "(ir_measures: `alpha_nDCG@k`); equal to ndeval query by query, except that ndeval "
        "orders tied scores by document id ascending, recallwatch descending as everywhere",
        kernel=_needs_subtopics,
        needs="subtopics",
    )
)


def subtopic_values(subtopics: SubtopicQrels, run: Run, query_ids: Sequence[str],
                    measure: Measure) -> np.ndarray[Any, Any]:
    """alpha-nDCG@k of each of ``query_ids`` (0 for one without subtopic judgments)."""
    assert measure.cutoff is not None
    wanted = set(query_ids)
    scores: dict[str, dict[str, float]] = {}
    for qid, doc, score in zip(run.query_ids.to_pylist(), run.doc_ids.to_pylist(),
                               run.scores.tolist(), strict=True):
        if qid in wanted:
            scores.setdefault(qid, {})[doc] = score
    judged = SubtopicQrels({q: subtopics.relevant[q] for q in query_ids
                            if q in subtopics.relevant})
    values = alpha_ndcg(judged, scores, measure.cutoff, alpha=measure.alpha)
    return np.array([values.get(q, 0.0) for q in query_ids], dtype=np.float64)


def read_judgments(qrels: str | PathLike[str], subtopics: str | PathLike[str] | None,
                   measures: Sequence[Measure]) -> tuple[Qrels, SubtopicQrels | None]:
    """The plain judgments and the subtopic ones a set of measures needs.

    With ``subtopics``, ``qrels`` holds the plain judgments. Without, a request made only of
    subtopic measures reads ``qrels`` itself as subtopic judgments (a diversity file repeats a
    document under each of its subtopics, which plain judgments may not)."""
    diverse = [m for m in measures if m.family.needs == "subtopics"]
    if subtopics is not None:
        return Qrels.read(qrels), SubtopicQrels.from_trec(subtopics)
    if diverse and len(diverse) == len(measures):
        judged = SubtopicQrels.from_trec(qrels)
        return judged.to_qrels(), judged
    if diverse:
        plain = next(m for m in measures if m.family.needs != "subtopics")
        raise UsageError(f"{diverse[0]} needs subtopic judgments and {plain} plain ones: give "
                         f"the plain judgments as QRELS and the subtopic ones ({_FORMAT}) with "
                         "--subtopics FILE")
    return Qrels.read(qrels), None
