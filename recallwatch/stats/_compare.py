"""A vs B on the same queries and truth, for several measures, with paired significance.

For each measure: both means, the difference ``delta = mean(B) - mean(A)`` (positive: B is
better), its bootstrap confidence interval, the raw p-value of a paired test and the p-value
Holm-corrected across all the measures compared together, win/tie/loss counts from B's side, and
how many queries the paired t-test would need to detect the observed delta.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallwatch.errors import InputError, UsageError
from recallwatch.stats._bootstrap import CIMethod, ConfidenceInterval, difference_ci
from recallwatch.stats._paired import paired_differences, test_differences
from recallwatch.stats._result import TEST_NAMES, TestName, TestResult

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from recallwatch.metrics import EvalResult, Measure, Qrels, Run, SubtopicQrels

__all__ = ["Comparison", "MeasureComparison", "compare", "compare_scores"]

#: Version of the shape returned by :meth:`Comparison.to_dict` (and ``recallwatch compare``).
SCHEMA = "recallwatch.compare/1"


@dataclass(frozen=True, slots=True)
class MeasureComparison:
    """B against A on one measure."""

    measure: str
    mean_a: float
    mean_b: float
    delta: float
    """``mean_b - mean_a``: positive when B scores higher."""
    ci: ConfidenceInterval
    test: TestResult
    p_holm: float
    """``test.p_value`` Holm-corrected across the measures of the same comparison."""
    wins: int
    """Queries where B beats A by more than the tie tolerance."""
    ties: int
    losses: int
    n_queries: int
    queries_needed: int | None
    """Queries a paired t-test needs to detect ``delta`` at the comparison's alpha and power,
    with the spread of differences seen here; None when delta is 0."""

    @property
    def p_value(self) -> float:
        return self.test.p_value

    def to_dict(self, alpha: float) -> dict[str, Any]:
        return {
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "delta": self.delta,
            "ci": [self.ci.low, self.ci.high],
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "significant": self.p_holm <= alpha,
            "statistic": _finite_or_none(self.test.statistic),
            "p_method": self.test.method,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "queries_needed": self.queries_needed,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every measure's :class:`MeasureComparison` over one set of queries, and how it was run."""

    measures: tuple[MeasureComparison, ...]
    query_ids: tuple[str, ...]
    test: TestName
    seed: int
    n_resamples: int
    alpha: float
    ci_method: CIMethod
    tie_tolerance: float
    power: float
    missing_from_a: tuple[str, ...] = ()
    """Judged queries run A returned nothing for (scored 0 there, as trec_eval -c)."""
    missing_from_b: tuple[str, ...] = ()
    not_judged: tuple[str, ...] = ()
    """Queries in either run but not in the judgments (ignored)."""

    def __getitem__(self, measure: str) -> MeasureComparison:
        for row in self.measures:
            if row.measure == measure:
                return row
        valid = ", ".join(row.measure for row in self.measures)
        raise UsageError(f"measure {measure!r} was not compared; compared: {valid}")

    def significant(self) -> tuple[MeasureComparison, ...]:
        """The measures whose Holm-corrected p-value is at most alpha."""
        return tuple(row for row in self.measures if row.p_holm <= self.alpha)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON object printed by ``recallwatch compare --format json``."""
        return {
            "schema": SCHEMA,
            "test": self.test,
            "seed": self.seed,
            "resamples": self.n_resamples,
            "alpha": self.alpha,
            "ci_level": 1.0 - self.alpha,
            "ci_method": self.ci_method,
            "tie_tolerance": self.tie_tolerance,
            "power": self.power,
            "queries": {
                "evaluated": len(self.query_ids),
                "missing_from_a": list(self.missing_from_a),
                "missing_from_b": list(self.missing_from_b),
                "not_judged": list(self.not_judged),
            },
            "measures": {row.measure: row.to_dict(self.alpha) for row in self.measures},
        }


def compare_scores(
    query_ids: Sequence[str],
    scores_a: Mapping[str, npt.ArrayLike],
    scores_b: Mapping[str, npt.ArrayLike],
    *,
    test: TestName = "randomization",
    seed: int = 0,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    ci_method: CIMethod = "bca",
    tie_tolerance: float = 1e-9,
    power: float = 0.8,
) -> Comparison:
    """Compare per-query scores of A and B, measure by measure, on the same queries.

    ``scores_a[measure][i]`` and ``scores_b[measure][i]`` are query ``query_ids[i]``'s score.
    Every measure uses a fresh generator seeded with ``seed``, so a measure's p-value and interval
    do not depend on which other measures are compared; the Holm correction does.
    """
    import numpy as np

    from recallwatch.stats._holm import holm
    from recallwatch.stats._power import queries_needed

    _check_options(test, alpha, tie_tolerance, power)
    if list(scores_a) != list(scores_b):
        raise InputError(field="measures", expected=f"the same measures for B as for A "
                         f"({', '.join(scores_a)})", found=", ".join(scores_b))
    if not scores_a:
        raise UsageError("nothing to compare: give at least one measure")
    rows: list[tuple[str, np.ndarray, TestResult, ConfidenceInterval, np.ndarray, np.ndarray]] = []
    for measure in scores_a:
        a = np.asarray(scores_a[measure], dtype=np.float64)
        b = np.asarray(scores_b[measure], dtype=np.float64)
        d = paired_differences(a, b, names=(f"A {measure}", f"B {measure}"))
        if d.size != len(query_ids):
            raise InputError(field=f"A {measure}", expected=f"one score per query "
                             f"({len(query_ids)})", found=d.size)
        result = test_differences(d, test=test, seed=seed, n_resamples=n_resamples)
        ci = difference_ci(d, level=1.0 - alpha, method=ci_method, seed=seed,
                           n_resamples=n_resamples)
        rows.append((measure, d, result, ci, a, b))
    adjusted = holm([row[2].p_value for row in rows])
    measures = []
    for (measure, d, result, ci, a, b), p_holm in zip(rows, adjusted, strict=True):
        delta = float(d.mean())
        sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
        measures.append(MeasureComparison(
            measure=measure,
            mean_a=float(a.mean()),
            mean_b=float(b.mean()),
            delta=delta,
            ci=ci,
            test=result,
            p_holm=float(p_holm),
            wins=int(np.count_nonzero(d > tie_tolerance)),
            ties=int(np.count_nonzero(np.abs(d) <= tie_tolerance)),
            losses=int(np.count_nonzero(d < -tie_tolerance)),
            n_queries=int(d.size),
            queries_needed=queries_needed(delta, sd, alpha=alpha, power=power),
        ))
    return Comparison(tuple(measures), tuple(query_ids), test, seed, n_resamples, alpha,
                      ci_method, tie_tolerance, power)


def compare(
    qrels: Qrels,
    run_a: Run,
    run_b: Run,
    measures: Sequence[str | Measure],
    *,
    test: TestName = "randomization",
    seed: int = 0,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    ci_method: CIMethod = "bca",
    tie_tolerance: float = 1e-9,
    power: float = 0.8,
    subtopics: SubtopicQrels | None = None,
) -> Comparison:
    """Evaluate runs A and B on the same judged queries and compare them measure by measure.

    Every judged query counts in both (trec_eval ``-c``): a query a run did not return scores 0
    there and is listed in ``missing_from_a`` / ``missing_from_b``. ``subtopics``: the subtopic
    judgments ``alpha_nDCG@k`` reads. The other arguments are those of :func:`compare_scores`.
    """
    from dataclasses import replace

    from recallwatch.metrics import evaluate, parse_measure

    _check_options(test, alpha, tie_tolerance, power)
    for measure in (parse_measure(m) for m in measures):
        if measure.family.aggregate == "gmean":
            raise UsageError(
                f"{measure} is a geometric mean over queries, and a comparison tests the mean "
                f"of per-query differences: compare {str(measure).replace('GMAP', 'AP', 1)} "
                "(its per-query values) instead")
    res_a = evaluate(qrels, run_a, measures, subtopics)
    res_b = evaluate(qrels, run_b, measures, subtopics)
    query_ids = sorted(set(res_a.query_ids) | set(res_b.query_ids))
    names = [str(m) for m in res_a.measures]
    result = compare_scores(
        query_ids,
        dict(zip(names, _aligned(res_a, query_ids), strict=True)),
        dict(zip(names, _aligned(res_b, query_ids), strict=True)),
        test=test, seed=seed, n_resamples=n_resamples, alpha=alpha, ci_method=ci_method,
        tie_tolerance=tie_tolerance, power=power,
    )
    return replace(
        result,
        missing_from_a=tuple(res_a.missing_from_run),
        missing_from_b=tuple(res_b.missing_from_run),
        not_judged=tuple(sorted(set(res_a.not_judged) | set(res_b.not_judged))),
    )


def _aligned(res: EvalResult, query_ids: list[str]) -> list[np.ndarray]:
    """Per-query values of every measure on ``query_ids``, 0 where ``res`` lacks the query.

    Both evaluations cover every judged query, so this is normally the identity; aligning by id
    keeps the pairing right even if one side's evaluated set ever differs.
    """
    import numpy as np

    if res.query_ids == query_ids:
        return [res.per_query[m] for m in res.measures]
    position = {qid: i for i, qid in enumerate(res.query_ids)}
    present = np.array([qid in position for qid in query_ids])
    source = np.array([position.get(qid, 0) for qid in query_ids], dtype=np.intp)
    return [np.where(present, res.per_query[m][source], 0.0) for m in res.measures]


def _check_options(test: str, alpha: float, tie_tolerance: float, power: float) -> None:
    if test not in TEST_NAMES:
        raise UsageError(f"unknown test {test!r}; valid tests: {', '.join(TEST_NAMES)}")
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"alpha must be strictly between 0 and 1, got {alpha}")
    if not (math.isfinite(tie_tolerance) and tie_tolerance >= 0.0):
        raise UsageError(f"the tie tolerance must be a finite number >= 0, got {tie_tolerance}")
    if not 0.0 < power < 1.0:
        raise UsageError(f"power must be strictly between 0 and 1, got {power}")


def _finite_or_none(value: float) -> float | None:
    # JSON has no infinity: a t statistic of +-inf (every query moved equally) prints as null.
    return value if math.isfinite(value) else None
