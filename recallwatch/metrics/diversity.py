"""α-nDCG@k: how well a ranking covers the different needs (subtopics) behind one query.

Judgments come as TREC diversity qrels, ``qid subtopic docid grade``: the column trec_eval
ignores names the subtopic, and a document may be relevant to several subtopics of its query.
A document's gain at rank r is the sum, over the subtopics it is relevant to (grade >= 1), of
(1 - α) raised to the number of documents above r already relevant to that subtopic, so a
second document on a need already met earns less; α-DCG@k sums gain / log2(1 + rank) over the
top k, and α-nDCG@k divides it by the α-DCG@k of an ideal ranking built greedily (the best next
document each time, as ndeval does; finding the true ideal is NP-hard). Ranking as everywhere:
score descending, then document id descending. A judged query absent from the run scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike

from recallwatch.errors import InputError, UsageError

__all__ = ["SubtopicQrels", "alpha_ndcg"]


@dataclass(frozen=True)
class SubtopicQrels:
    """query id -> document id -> the subtopics it is relevant to (grade >= 1)."""

    relevant: Mapping[str, Mapping[str, frozenset[str]]]

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, str, int]]) -> SubtopicQrels:
        """Rows ``(query id, subtopic, document id, grade)``."""
        out: dict[str, dict[str, set[str]]] = {}
        for qid, subtopic, doc, grade in rows:
            docs = out.setdefault(qid, {})
            if grade >= 1:
                docs.setdefault(doc, set()).add(subtopic)
        return cls({q: {d: frozenset(s) for d, s in docs.items()} for q, docs in out.items()})

    @classmethod
    def from_trec(cls, path: str | PathLike[str]) -> SubtopicQrels:
        """A TREC diversity qrels file: ``qid subtopic docid grade`` per line (``#`` comments)."""
        rows = []
        seen: dict[tuple[str, str, str], int] = {}
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                fields = line.split()
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) != 4:
                    raise InputError(source=str(path), line=n, field="line",
                                     expected="4 fields: qid subtopic docid grade",
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
        return cls.from_rows(rows)


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
    the ones already placed (ties: the document id that sorts first)."""
    left = dict(sorted(docs.items()))
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
