"""evaluate(qrels, run, measures) -> EvalResult: every measure, every query, at once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.metrics._data import Qrels, Run
from recallwatch.metrics._measure import Measure, combine, parse_measure
from recallwatch.metrics._ranking import Ranking, rank_run

if TYPE_CHECKING:
    from recallwatch.metrics.diversity import SubtopicQrels

__all__ = ["EvalResult", "evaluate", "merged"]


@dataclass(frozen=True)
class EvalResult:
    """Per-query and aggregate values of each measure, trec_eval ``-c`` semantics.

    Every judged query is evaluated; one absent from the run scores 0 on every measure and is
    listed in ``missing_from_run``. Queries in the run without judgments are ignored and listed
    in ``not_judged``.
    """

    measures: list[Measure]  # in the order asked for
    query_ids: list[str]  # evaluated queries, sorted
    per_query: dict[Measure, np.ndarray[Any, Any]]  # float64, aligned with query_ids
    aggregate: dict[Measure, float]  # mean over query_ids (a sum for counts, GMAP geometric)
    missing_from_run: list[str]
    not_judged: list[str]

    def to_json(self, per_query: bool = False) -> dict[str, Any]:
        """The ``recallwatch eval --format json`` object (a stable contract: keys only added)."""
        out: dict[str, Any] = {"aggregate": {str(m): self.aggregate[m] for m in self.measures}}
        if per_query:
            columns = [(str(m), self.per_query[m].tolist()) for m in self.measures]
            out["per_query"] = {
                qid: {name: values[i] for name, values in columns}
                for i, qid in enumerate(self.query_ids)
            }
        out["queries"] = {
            "evaluated": len(self.query_ids),
            "missing_from_run": list(self.missing_from_run),
            "not_judged": list(self.not_judged),
        }
        return out


def evaluate(qrels: Qrels, run: Run, measures: Iterable[str | Measure],
             subtopics: SubtopicQrels | None = None) -> EvalResult:
    """Evaluate ``run`` against ``qrels`` on ``measures`` (names such as ``"nDCG@10"`` or
    :class:`Measure` values). ``subtopics``: the subtopic judgments ``alpha_nDCG@k`` reads
    (the queries evaluated are those of ``qrels`` all the same)."""
    wanted = list(
        dict.fromkeys(
            parse_measure(m) for m in ([measures] if isinstance(measures, str) else measures)
        )
    )
    if not wanted:
        raise UsageError("no measure given: name at least one, e.g. nDCG@10")
    joined = rank_run(qrels, run, judged=any(m.family.needs == "judged" for m in wanted))
    per_query = {m: _values(m, joined.ranking, joined.query_ids, run, subtopics) for m in wanted}
    aggregate = {m: combine(m, values) for m, values in per_query.items()}
    return EvalResult(
        measures=wanted,
        query_ids=joined.query_ids,
        per_query=per_query,
        aggregate=aggregate,
        missing_from_run=joined.missing_from_run,
        not_judged=joined.not_judged,
    )


def _values(m: Measure, ranking: Ranking, query_ids: list[str], run: Run,
            subtopics: SubtopicQrels | None) -> np.ndarray[Any, Any]:
    if m.family.needs == "subtopics" and subtopics is not None:
        from recallwatch.metrics.diversity import subtopic_values

        return subtopic_values(subtopics, run, query_ids, m)
    return m.family.kernel(ranking, m)


def merged(wanted: list[Measure], names: list[str],
           parts: list[tuple[np.ndarray[Any, Any], EvalResult]], not_judged: list[str]
           ) -> EvalResult:
    """One result from the results of parts of a run (each judged query in exactly one part,
    which holds it at its position among ``names``, every judged query in byte order): the
    whole run's, bit for bit, as a query's values depend only on its own lines and judgments."""
    per_query = {m: np.zeros(len(names), np.result_type(*(p.per_query[m] for _, p in parts)))
                 for m in wanted}
    for positions, part in parts:
        for m in wanted:
            per_query[m][positions] = part.per_query[m]
    return EvalResult(
        measures=wanted,
        query_ids=names,
        per_query=per_query,
        aggregate={m: combine(m, v) for m, v in per_query.items()},
        missing_from_run=sorted(q for _, p in parts for q in p.missing_from_run),
        not_judged=not_judged,
    )
