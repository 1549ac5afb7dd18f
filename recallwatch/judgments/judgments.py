"""Graded judgments with their source, written as TREC qrels plus a provenance file.

Whatever produced a label (a person, a click model, an LLM), recallwatch's metrics read it as an
ordinary TREC qrels line ``qid 0 docid grade``. The qrels format has no room for where a label
came from, so every qrels file written here gets a sidecar ``<file>.provenance.json`` naming the
source of its labels, the inputs (with hashes) and the settings that made them; ``--format json``
outputs carry a ``source`` on every label.

Click-model relevance (0–1) becomes a grade 0–3 by cut points: grade = number of cut points at
or below the estimate, so the default cuts (0.15, 0.35, 0.6) give 0 below 0.15, 1 from 0.15,
2 from 0.35 and 3 from 0.6. A pair seen in fewer than ``min_impressions`` impressions, or
examined fewer than ``min_examinations`` times by the model's own reckoning (a pair shown often
but always too deep to be looked at has no evidence), gets no label at all: too little evidence
is not evidence of irrelevance. The pairs left out are counted by reason and listed.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.judgments.agreement import Agreement, Weights
    from recallwatch.judgments.click_models import ClickModelFit

__all__ = [
    "DEFAULT_CUTS",
    "DEFAULT_MIN_EXAMINATIONS",
    "DEFAULT_MIN_IMPRESSIONS",
    "Judgment",
    "JudgmentSet",
    "agreement_with_qrels",
    "check_cuts",
    "grade",
    "judgments_from_fit",
    "provenance_path",
    "read_judgments",
    "read_qrels_grades",
    "write_judged_qrels",
]

DEFAULT_CUTS = (0.15, 0.35, 0.6)
DEFAULT_MIN_IMPRESSIONS = 10
DEFAULT_MIN_EXAMINATIONS = 5.0


@dataclass(frozen=True, slots=True)
class Judgment:
    """One graded (query, document) label and where it came from."""

    query_id: str
    id: str
    grade: int
    source: str  # "human", "click-model:pbm", "llm:<model>", …
    relevance: float | None = None  # the estimate behind the grade, 0–1 (click models)
    impressions: int | None = None
    clicks: int | None = None
    effective_n: float | None = None
    ci: tuple[float, float] | None = None
    judge: str | None = None  # who graded it (a person's name in a judgments file)
    at: str | None = None  # when, ISO 8601 UTC

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query_id": self.query_id, "id": self.id, "grade": self.grade,
                               "source": self.source}
        if self.judge is not None:
            out["judge"] = self.judge
        if self.at is not None:
            out["at"] = self.at
        if self.relevance is not None:
            out["relevance"] = self.relevance
        if self.impressions is not None:
            out["impressions"] = self.impressions
        if self.clicks is not None:
            out["clicks"] = self.clicks
        if self.effective_n is not None:
            out["effective_examinations"] = round(self.effective_n, 3)
        if self.ci is not None:
            out["ci"] = [self.ci[0], self.ci[1]]
        return out


@dataclass(frozen=True)
class JudgmentSet:
    """Labels of one source, and the pairs that were left unlabelled."""

    judgments: list[Judgment]
    source: str
    unlabelled: int = 0  # pairs left out (too few impressions or examinations)
    settings: dict[str, Any] | None = None
    left_out: dict[str, int] | None = None  # reason → pairs
    too_sparse: list[dict[str, Any]] | None = None  # shown enough, examined too rarely

    def grades(self) -> dict[tuple[str, str], int]:
        return {(j.query_id, j.id): j.grade for j in self.judgments}

    def histogram(self) -> dict[int, int]:
        out = dict.fromkeys(range(4), 0)
        for j in self.judgments:
            out[j.grade] = out.get(j.grade, 0) + 1
        return out


def check_cuts(cuts: Sequence[float]) -> tuple[float, ...]:
    """The cut points as a tuple, or UsageError when they are not three increasing numbers in
    (0, 1)."""
    values = tuple(float(c) for c in cuts)
    if len(values) != 3 or not all(0.0 < c < 1.0 for c in values) \
            or not all(a < b for a, b in itertools.pairwise(values)):
        raise UsageError(f"cuts must be three increasing numbers strictly between 0 and 1 "
                         f"(grades 1, 2, 3 start there), got {list(values)}")
    return values


def grade(relevance: Any, cuts: Sequence[float] = DEFAULT_CUTS) -> Any:
    """Grades 0–3 of relevance estimates (array or scalar): how many cut points are ≤ it."""
    import numpy as np

    return np.searchsorted(np.asarray(check_cuts(cuts)), relevance, side="right")


def judgments_from_fit(fit: ClickModelFit, *, min_impressions: int = DEFAULT_MIN_IMPRESSIONS,
                       cuts: Sequence[float] = DEFAULT_CUTS,
                       min_examinations: float = DEFAULT_MIN_EXAMINATIONS) -> JudgmentSet:
    """Grade every pair of a fitted click model seen at least ``min_impressions`` times and
    examined at least ``min_examinations`` times (the model's effective examinations), ordered
    by query, then estimated relevance (highest first), then document id. The pairs shown often
    enough but examined too rarely are listed in ``too_sparse``."""
    import numpy as np

    if min_impressions < 1:
        raise UsageError(f"the minimum number of impressions must be >= 1, got {min_impressions}")
    if not min_examinations > 0:
        raise UsageError(f"the minimum number of examinations must be > 0 (a pair never looked "
                         f"at has no evidence), got {min_examinations}")
    cuts = check_cuts(cuts)
    counts = fit.counts
    shown = counts.impressions >= min_impressions
    examined = fit.effective_n >= min_examinations
    keep = np.flatnonzero(shown & examined)
    sparse = np.flatnonzero(shown & ~examined)
    grades = grade(fit.relevance[keep], cuts)
    queries, docs = counts.pair_labels()
    source = f"click-model:{fit.model}"
    out = [
        Judgment(query_id=queries[i], id=docs[i], grade=int(g), source=source,
                 relevance=round(float(fit.relevance[i]), 6),
                 impressions=int(counts.impressions[i]), clicks=int(counts.clicks[i]),
                 effective_n=float(fit.effective_n[i]),
                 ci=(round(float(fit.ci_low[i]), 6), round(float(fit.ci_high[i]), 6)))
        for i, g in zip(keep.tolist(), grades.tolist())
    ]
    out.sort(key=lambda j: (j.query_id, -(j.relevance or 0.0), j.id))
    left_out = {
        f"shown fewer than {min_impressions} times": int(np.count_nonzero(~shown)),
        f"examined fewer than {min_examinations:g} times (effective examinations: shown, but "
        "too rarely looked at to tell)": int(sparse.size),
    }
    too_sparse = [{"query_id": queries[i], "id": docs[i],
                   "impressions": int(counts.impressions[i]), "clicks": int(counts.clicks[i]),
                   "effective_examinations": round(float(fit.effective_n[i]), 3)}
                  for i in sparse.tolist()]
    too_sparse.sort(key=lambda r: (r["query_id"], r["id"]))
    return JudgmentSet(out, source, unlabelled=int(counts.n_pairs - keep.size),
                       settings={"min_impressions": min_impressions,
                                 "min_examinations": min_examinations, "cuts": list(cuts)},
                       left_out=left_out, too_sparse=too_sparse)


def provenance_path(qrels_path: str | PathLike[str]) -> Path:
    p = Path(qrels_path)
    return p.with_name(p.name + ".provenance.json")


def write_qrels_file(path: str | PathLike[str], labels: Sequence[tuple[str, str, int]]) -> None:
    """Write ``(query id, document id, grade)`` as TREC qrels, whole or not at all."""
    from recallwatch.errors import InputError
    from recallwatch.formats.trec import write_qrels

    target = Path(path)
    if target.is_dir():
        raise InputError("is a folder: name the qrels file to write", source=target)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_qrels(target, [q for q, _, _ in labels], [d for _, d, _ in labels],
                [g for _, _, g in labels])  # written whole or not at all


def write_judged_qrels(path: str | PathLike[str], judgments: JudgmentSet,
                       provenance: dict[str, Any]) -> Path:
    """Write TREC qrels and their provenance sidecar, each whole or not at all. Returns the
    sidecar's path."""
    from recallwatch._files import write_atomic

    target = Path(path)
    write_qrels_file(target, [(j.query_id, j.id, j.grade) for j in judgments.judgments])
    sidecar = provenance_path(target)
    record = {"qrels": target.name, "source": judgments.source,
              "labels": len(judgments.judgments), "grades": judgments.histogram(),
              **provenance}
    write_atomic(sidecar, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return sidecar


def read_qrels_grades(path: str | PathLike[str]) -> dict[tuple[str, str], int]:
    """{(query id, document id): grade} of a TREC qrels file (plain or gzip)."""
    from recallwatch.formats.trec import read_qrels

    table = read_qrels(path)
    return dict(zip(zip(table.query_ids.to_pylist(), table.doc_ids.to_pylist()),
                    table.values.tolist()))


def agreement_with_qrels(labels: dict[tuple[str, str], int],
                         reference: dict[tuple[str, str], int], *,
                         weights: Weights = "quadratic", rater: str = "labels",
                         reference_name: str = "human") -> Agreement | None:
    """Agreement on the pairs both label (None when they share none). The categories are the
    grades 0–3 plus any other grade the reference uses (kappa's weights follow their order)."""
    from recallwatch.judgments.agreement import agreement

    common = sorted(set(labels) & set(reference))
    if not common:
        return None
    ours = [labels[k] for k in common]
    theirs = [reference[k] for k in common]
    categories = sorted({0, 1, 2, 3} | set(theirs) | set(ours))
    return agreement(theirs, ours, weights=weights, categories=categories,
                     rater_a=reference_name, rater_b=rater)


def read_judgments(path: str | PathLike[str], *, trec_ids: bool = False) -> list[Judgment]:
    """The judgments of a judgments file (JSON Lines, see :mod:`recallwatch.formats.judging`) or
    of TREC qrels (source ``qrels``, no judge), in file order. ``trec_ids``: they go to a TREC
    file, so an id holding whitespace is refused at its line."""
    from recallwatch.formats.judging import read_judgment_records

    out = []
    for r in read_judgment_records(path, trec_ids=trec_ids):
        ci = r.get("ci")
        out.append(Judgment(
            query_id=r["query_id"], id=r["id"], grade=int(r["grade"]), source=r["source"],
            relevance=r.get("relevance"), impressions=r.get("impressions"),
            clicks=r.get("clicks"), effective_n=r.get("effective_examinations"),
            ci=None if not isinstance(ci, list) or len(ci) != 2 else (ci[0], ci[1]),
            judge=r.get("judge"), at=r.get("at")))
    return out
