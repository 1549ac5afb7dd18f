"""What every paired test returns (:class:`TestResult`) and the names of the tests: one module
that the tests' own modules (``_paired``, ``_randomization``) both import, so neither imports the
other for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["TEST_NAMES", "Method", "TestName", "TestResult"]

TestName = Literal["randomization", "t", "wilcoxon"]
TEST_NAMES: tuple[TestName, ...] = get_args(TestName)

#: How a p-value was obtained: enumeration of every sign assignment, Monte Carlo sampling of them,
#: Student's t distribution, or the normal approximation of the Wilcoxon statistic.
Method = Literal["exact", "monte-carlo", "student-t", "normal"]


@dataclass(frozen=True, slots=True)
class TestResult:
    """The outcome of one two-sided paired test of B against A."""

    __test__ = False  # not a pytest test class, despite the name

    test: TestName
    statistic: float
    """t for the t-test, min(W+, W-) for Wilcoxon, the mean difference for randomization."""
    p_value: float
    n: int
    """Number of pairs (queries) tested, zero differences included."""
    method: Method
    n_resamples: int
    """Sign assignments drawn (randomization, Monte Carlo); 0 when the p-value is exact/analytic."""
