"""Rank metrics with trec_eval's semantics, computed for all queries at once.

    >>> from recallwatch.metrics import Qrels, Run, evaluate
    >>> res = evaluate(Qrels.from_trec("qrels.txt"), Run.from_trec("run.txt"), ["nDCG@10", "R@100"])
    >>> res.aggregate, res.per_query, res.missing_from_run

Measure names follow ir_measures (``P@k``, ``R@k``, ``Rcap@k``, ``RR``, ``RR@k``, ``nDCG``,
``nDCG@k``, ``AP``, ``AP@k``, ``Success@k``, ``Rprec``, with ``(rel=N)`` and ``(dcg=exp-log2)``
parameters, and trec_eval's standard set: ``NumQ``, ``NumRet``, ``NumRel``, ``NumRelRet``,
``Bpref``, ``infAP``, ``GMAP``, ``IPrec@x``, ``AP11pt``, ``SetP``, ``SetR``, ``SetF``, plus
``Judged@k``, ``ERR@k`` and ``RBP(p=0.8)``, and ``alpha_nDCG@k`` from :class:`SubtopicQrels`
given as ``evaluate(..., subtopics=)``); ``evaluate_file(qrels, path, measures)`` evaluates a
run file a block of queries at a time (the same values; ``qrels`` may be a qrels file's path,
held whole only when it is small); ``MEASURES`` lists the families and
their declared parameters, ``combine`` turns per-query values into the run's figure.
"""

from recallwatch.metrics._catalog import *  # noqa: F403  (registers the measure families)
from recallwatch.metrics._data import Qrels, Run
from recallwatch.metrics._evaluate import EvalResult, MeasureMap, evaluate, measure_labels
from recallwatch.metrics._measure import (
    MEASURES,
    Family,
    Measure,
    Param,
    combine,
    parse_measure,
)
from recallwatch.metrics._streamed import FileEvaluation, evaluate_file
from recallwatch.metrics.diversity import SubtopicQrels

__all__ = [
    "MEASURES",
    "EvalResult",
    "Family",
    "FileEvaluation",
    "Measure",
    "MeasureMap",
    "Param",
    "Qrels",
    "Run",
    "SubtopicQrels",
    "combine",
    "evaluate",
    "evaluate_file",
    "measure_labels",
    "parse_measure",
]
