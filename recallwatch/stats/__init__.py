"""Paired significance tests, bootstrap intervals, multiple-testing correction and power.

Everything works on paired per-query score arrays (``a[i]`` and ``b[i]`` are the same query under
systems A and B) and is two-sided; randomness is seeded, so the same inputs give the same
numbers. :func:`compare` runs the whole A/B comparison from qrels and two runs; :func:`compare_many`
runs several.
"""

from recallwatch.stats._bootstrap import CIMethod, ConfidenceInterval, bootstrap_ci
from recallwatch.stats._compare import Comparison, MeasureComparison, compare, compare_scores
from recallwatch.stats._holm import holm
from recallwatch.stats._multi import MultiComparison, PairTest, compare_many, compare_many_scores
from recallwatch.stats._paired import Method, TestName, TestResult, paired_test
from recallwatch.stats._power import paired_t_power, queries_needed, queries_needed_from
from recallwatch.stats._quantile import (
    QuantileInterval,
    calls_needed,
    quantile_interval,
    rounds_separate,
)

__all__ = [
    "CIMethod",
    "Comparison",
    "ConfidenceInterval",
    "MeasureComparison",
    "Method",
    "MultiComparison",
    "PairTest",
    "QuantileInterval",
    "TestName",
    "TestResult",
    "bootstrap_ci",
    "calls_needed",
    "compare",
    "compare_many",
    "compare_many_scores",
    "compare_scores",
    "holm",
    "paired_t_power",
    "paired_test",
    "quantile_interval",
    "queries_needed",
    "queries_needed_from",
    "rounds_separate",
]
