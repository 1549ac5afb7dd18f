"""Rank metrics with trec_eval's semantics, computed for all queries at once.

    >>> from recallwatch.metrics import Qrels, Run, evaluate
    >>> res = evaluate(Qrels.from_trec("qrels.txt"), Run.from_trec("run.txt"), ["nDCG@10", "R@100"])
    >>> res.aggregate, res.per_query, res.missing_from_run

Measure names follow ir_measures (``P@k``, ``R@k``, ``Rcap@k``, ``RR``, ``RR@k``, ``nDCG``,
``nDCG@k``, ``AP``, ``AP@k``, ``Success@k``, ``Rprec``, with ``(rel=N)`` and ``(dcg=exp-log2)``
parameters); ``MEASURES`` lists the families and their declared parameters.
"""

from recallwatch.metrics._catalog import *  # noqa: F403  (registers the measure families)
from recallwatch.metrics._data import Qrels, Run
from recallwatch.metrics._evaluate import EvalResult, evaluate
from recallwatch.metrics._measure import MEASURES, Family, Measure, Param, parse_measure

__all__ = [
    "MEASURES",
    "EvalResult",
    "Family",
    "Measure",
    "Param",
    "Qrels",
    "Run",
    "evaluate",
    "parse_measure",
]
