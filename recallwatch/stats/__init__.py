"""Paired significance tests, bootstrap intervals, multiple-testing correction and power.

Everything works on paired per-query score arrays (``a[i]`` and ``b[i]`` are the same query under
systems A and B) and is two-sided; randomness is seeded, so the same inputs give the same
numbers. :func:`compare` runs the whole A/B comparison from qrels and two runs; :func:`compare_many`
runs several; :func:`compare_runs` (``recallwatch.compare``) takes them in any shape. Timings
have their own: :func:`quantile` (a quantile of per-call latencies with its interval, or none
from too few calls), :func:`quantile_interval` (the value always, a bound only where the calls
give it) and :func:`quantile_ratio` (the ratio of two quantiles with the interval their
intervals imply).
"""

from recallwatch.stats._bootstrap import CIMethod, ConfidenceInterval, bootstrap_ci
from recallwatch.stats._compare import Comparison, MeasureComparison, compare, compare_scores
from recallwatch.stats._holm import holm
from recallwatch.stats._latency import QuantileRatio, quantile_ratio
from recallwatch.stats._multi import (
    MultiComparison,
    PairTest,
    compare_many,
    compare_many_scores,
    compare_runs,
)
from recallwatch.stats._paired import Method, TestName, TestResult, paired_test
from recallwatch.stats._power import paired_t_power, queries_needed, queries_needed_from
from recallwatch.stats._proportion import wilson_interval
from recallwatch.stats._quantile import (
    Quantile,
    QuantileInterval,
    calls_needed,
    quantile,
    quantile_interval,
    quantile_low_end,
    quantile_name,
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
    "Quantile",
    "QuantileInterval",
    "QuantileRatio",
    "TestName",
    "TestResult",
    "bootstrap_ci",
    "calls_needed",
    "compare",
    "compare_many",
    "compare_many_scores",
    "compare_runs",
    "compare_scores",
    "holm",
    "paired_t_power",
    "paired_test",
    "quantile",
    "quantile_interval",
    "quantile_low_end",
    "quantile_name",
    "quantile_ratio",
    "queries_needed",
    "queries_needed_from",
    "rounds_separate",
    "wilson_interval",
]
