"""evaluate(qrels, run, measures) -> EvalResult: every measure, every query, at once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.formats.frames import Frame
from recallwatch.metrics._data import Qrels, Run
from recallwatch.metrics._measure import Measure, combine, parse_measure
from recallwatch.metrics._ranking import Ranking, rank_run

if TYPE_CHECKING:
    from recallwatch.metrics.diversity import SubtopicQrels

__all__ = ["EvalResult", "MeasureMap", "evaluate", "measure_labels", "merged"]

V = TypeVar("V")


class MeasureMap(Mapping[Any, V]):
    """Values keyed by the measure names as they were given (``res.aggregate["nDCG@10"]``); a
    :class:`Measure`, or another spelling of the same measure, finds the same value. Iterates
    over the names given, in order."""

    def __init__(self, labels: Sequence[str], values: Mapping[Measure, V]) -> None:
        self._values = dict(values)
        self._labels = dict(zip(labels, self._values, strict=True))

    def _measure(self, key: object) -> Measure:
        if isinstance(key, Measure):
            found: Measure | None = key
        elif isinstance(key, str):
            found = self._labels.get(key)
            if found is None:
                try:
                    found = parse_measure(key)
                except UsageError:
                    found = None
        else:
            found = None
        if found is None or found not in self._values:
            raise KeyError(f"{key!r} was not evaluated; evaluated: {', '.join(self._labels)}")
        return found

    def __getitem__(self, key: object) -> V:
        return self._values[self._measure(key)]

    def __contains__(self, key: object) -> bool:
        try:
            self._measure(key)
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels)

    def __len__(self) -> int:
        return len(self._labels)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


@dataclass(frozen=True)
class EvalResult:
    """Per-query and aggregate values of each measure, trec_eval ``-c`` semantics.

    Every judged query is evaluated; one absent from the run scores 0 on every measure and is
    listed in ``missing_from_run``. Queries in the run without judgments are ignored and listed
    in ``not_judged``. ``aggregate`` and ``per_query`` are keyed by the measure names as given
    (``res.aggregate["nDCG@10"]``); a :class:`Measure` finds them too.
    """

    measures: list[Measure]  # in the order asked for
    query_ids: list[str]  # evaluated queries, sorted
    per_query: Mapping[Any, np.ndarray[Any, Any]]  # float64, aligned with query_ids
    aggregate: Mapping[Any, float]  # mean over query_ids (a sum for counts, GMAP geometric)
    missing_from_run: list[str]
    not_judged: list[str]
    labels: tuple[str, ...] = ()  # the measures' names as given (default: their own)

    def __post_init__(self) -> None:
        labels = self.labels or tuple(str(m) for m in self.measures)
        object.__setattr__(self, "labels", labels)
        for name in ("per_query", "aggregate"):
            values = getattr(self, name)
            if not isinstance(values, MeasureMap):
                ordered = {m: values[m] for m in self.measures}
                object.__setattr__(self, name, MeasureMap(labels, ordered))

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

    def to_dict(self) -> dict[str, Any]:
        """``{"aggregate": {name: value}, "per_query": {query_id: {name: value}}, "queries":
        {...}}``, keyed by the measure names as given."""
        columns = [(label, self.per_query[m].tolist())
                   for label, m in zip(self.labels, self.measures, strict=True)]
        return {
            "aggregate": {label: self.aggregate[m]
                          for label, m in zip(self.labels, self.measures, strict=True)},
            "per_query": {qid: {name: values[i] for name, values in columns}
                          for i, qid in enumerate(self.query_ids)},
            "queries": self.to_json()["queries"],
        }

    def to_frame(self, library: Frame = "pandas") -> Any:
        """One row per evaluated query: ``query_id`` and a column per measure (named as given);
        the means are :attr:`aggregate`."""
        import pyarrow as pa

        from recallwatch.formats.frames import to_frame

        columns: dict[str, Any] = {"query_id": pa.array(self.query_ids, pa.string())}
        for label, m in zip(self.labels, self.measures, strict=True):
            columns[label] = pa.array(self.per_query[m])
        return to_frame(pa.table(columns), library)

    def _repr_html_(self) -> str:
        """The means as a table, for Jupyter."""
        from html import escape

        rows = "".join(f"<tr><td>{escape(label)}</td><td>{self.aggregate[m]:.4f}</td></tr>"
                       for label, m in zip(self.labels, self.measures, strict=True))
        notes = [f"{len(self.query_ids)} queries evaluated"]
        if self.missing_from_run:
            notes.append(f"{len(self.missing_from_run)} judged but not in the run (scored 0)")
        if self.not_judged:
            notes.append(f"{len(self.not_judged)} in the run but not judged (ignored)")
        return (f"<table><caption>{escape('; '.join(notes))}</caption>"
                f"<thead><tr><th>measure</th><th>mean</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>")


def evaluate(qrels: Any, run: Any, measures: str | Measure | Iterable[str | Measure],
             subtopics: SubtopicQrels | None = None) -> EvalResult:
    """Evaluate ``run`` against ``qrels`` on ``measures`` (names such as ``"nDCG@10"`` or
    :class:`Measure` values); the result is keyed by the names as given. ``qrels`` and ``run``
    may be :class:`Qrels`/:class:`Run`, ``{query_id: {doc_id: value}}`` dicts, pandas or polars
    frames or file paths (see :meth:`Qrels.of`, :meth:`Run.of`; qrels also ``irds:ID`` and
    ``beir:DIR``). ``subtopics``: the subtopic judgments ``alpha_nDCG@k`` reads (the queries
    evaluated are those of ``qrels`` all the same)."""
    labels = measure_labels(measures)
    wanted = list(labels.values())
    qrels, run = Qrels.of(qrels), Run.of(run)
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
        labels=tuple(labels),
    )


def measure_labels(measures: object) -> dict[str, Measure]:
    """Each measure by the name it was given (the first name of a measure given twice)."""
    if isinstance(measures, str | Measure):
        measures = [measures]
    if not isinstance(measures, Iterable):
        raise UsageError(f"measures: expected a measure name such as 'nDCG@10' or a list of "
                         f"them; found {type(measures).__name__}")
    out: dict[str, Measure] = {}
    for given in measures:
        if not isinstance(given, str | Measure):
            raise UsageError(f"measures: expected names such as 'nDCG@10'; found "
                             f"{type(given).__name__} {given!r}")
        m = parse_measure(given)
        if m not in out.values():
            out[given if isinstance(given, str) else str(given)] = m
    if not out:
        raise UsageError("no measure given: name at least one, e.g. nDCG@10")
    return out


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
        labels=parts[0][1].labels if parts else (),
    )
