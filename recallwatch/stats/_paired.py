"""Paired significance tests over per-query scores: one entry point, three tests.

Every test here looks at the per-query differences ``d = b - a`` (B is the candidate, A the
baseline), is two-sided, and returns a :class:`TestResult` of the same shape. Degenerate inputs
have a defined answer instead of NaN: when every difference is zero (or there is a single pair)
there is no evidence of a difference and the p-value is 1.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recallwatch.errors import InputError, UsageError
from recallwatch.stats._randomization import exact_sign_flip_pvalue, randomization_test
from recallwatch.stats._result import TEST_NAMES, Method, TestName, TestResult

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Method", "TestName", "TestResult", "paired_differences", "paired_test", "test_differences",
]


def paired_differences(
    a: npt.ArrayLike, b: npt.ArrayLike, *, names: tuple[str, str] = ("a", "b")
) -> np.ndarray:
    """Validate two paired score arrays and return ``b - a`` as float64.

    A difference within 2**-40 of the largest score is float noise of two equal scores computed
    two ways (``0.1 + 0.2`` against ``0.3``) and is returned as exactly 0: twenty such queries
    must not make a "significant" difference. Raises InputError when the arrays are not 1-D,
    differ in length, are empty, or hold NaN/inf.
    """
    import numpy as np

    arrays = []
    for name, values in zip(names, (a, b), strict=True):
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(field=name, expected="an array of numbers", found=str(exc)) from None
        if arr.ndim != 1:
            raise InputError(field=name, expected="a 1-D array of per-query scores",
                             found=f"<an array of shape {arr.shape}>")
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise InputError(record=f"position {int(bad[0])}", field=name,
                             expected="a finite score", found=float(arr[bad[0]]))
        arrays.append(arr)
    if arrays[0].shape != arrays[1].shape:
        raise InputError(field=names[1],
                         expected=f"as many scores as {names[0]} ({arrays[0].size})",
                         found=arrays[1].size, hint="paired tests need the same queries in both")
    if arrays[0].size == 0:
        raise InputError(field=names[0], expected="at least one query", found="<no scores>")
    d = arrays[1] - arrays[0]
    scale = max(float(np.abs(arrays[0]).max()), float(np.abs(arrays[1]).max()))
    d[np.abs(d) <= scale * 2.0**-40] = 0.0
    return d


def paired_test(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    test: TestName = "randomization",
    seed: int = 0,
    n_resamples: int = 10_000,
) -> TestResult:
    """Two-sided paired test of whether B's per-query scores differ from A's.

    ``a[i]`` and ``b[i]`` must be the same query's score under each system. ``seed`` and
    ``n_resamples`` are used by the randomization test only; the same inputs and seed always give
    the same p-value.
    """
    return test_differences(paired_differences(a, b), test=test, seed=seed,
                            n_resamples=n_resamples)


def test_differences(d: np.ndarray, *, test: TestName, seed: int, n_resamples: int) -> TestResult:
    """:func:`paired_test` over already validated differences ``d = b - a``."""
    if test == "randomization":
        return randomization_test(d, seed=seed, n_resamples=n_resamples)
    if test == "t":
        return _t_test(d)
    if test == "wilcoxon":
        return _wilcoxon(d)
    raise UsageError(f"unknown test {test!r}; valid tests: {', '.join(TEST_NAMES)}")


def _t_test(d: np.ndarray) -> TestResult:
    """Student's paired t-test: t = mean(d) / (sd(d) / sqrt(n)), n - 1 degrees of freedom."""
    import numpy as np
    from scipy.special import stdtr

    n = int(d.size)
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if n < 2 or (sd == 0.0 and mean == 0.0):
        return TestResult("t", 0.0, 1.0, n, "student-t", 0)
    if sd == 0.0:  # every query moved by exactly the same amount: the evidence is unbounded
        return TestResult("t", math.copysign(math.inf, mean), 0.0, n, "student-t", 0)
    t = mean / (sd / math.sqrt(n))
    p = 2.0 * float(stdtr(n - 1, -abs(t)))
    return TestResult("t", t, float(np.clip(p, 0.0, 1.0)), n, "student-t", 0)


def _wilcoxon(d: np.ndarray) -> TestResult:
    """Wilcoxon signed-rank test on the non-zero differences ('wilcox' zero handling).

    The method is chosen here rather than left to scipy's ``auto``, so the label is true and
    stable across scipy versions: scipy's exact null distribution for up to 50 differences
    without tied magnitudes; with ties, the exact conditional distribution by enumerating every
    sign assignment of the signed mid-ranks (up to ``_MAX_EXACT_TIED`` differences); otherwise
    the normal approximation with tie correction and no continuity correction.
    """
    import numpy as np
    from scipy import stats

    n = int(d.size)
    magnitude = _magnitude_keys(d)
    kept = magnitude > 0
    m = int(np.count_nonzero(kept))
    if m == 0:  # scipy divides by zero here; no difference at all means no evidence
        return TestResult("wilcoxon", 0.0, 1.0, n, "exact", 0)
    signed_ranks = np.copysign(stats.rankdata(magnitude[kept]), d[kept])
    r_plus = float(signed_ranks[signed_ranks > 0].sum())
    statistic = min(r_plus, m * (m + 1) / 2.0 - r_plus)
    tied = np.unique(magnitude[kept]).size < m
    if not tied and m <= 50:
        p = stats.wilcoxon(signed_ranks, method="exact").pvalue
        method: Method = "exact"
    elif tied and m <= _MAX_EXACT_TIED:
        p = exact_sign_flip_pvalue(signed_ranks)
        method = "exact"
    else:
        # Given the signed ranks, scipy sees exactly the ties decided here.
        p = stats.wilcoxon(signed_ranks, method="asymptotic", correction=False).pvalue
        method = "normal"
    return TestResult("wilcoxon", statistic, float(min(1.0, p)), n, method, 0)


# 2**16 sign assignments of at most 16 ranks: a few milliseconds.
_MAX_EXACT_TIED = 16


def _magnitude_keys(d: np.ndarray) -> np.ndarray:
    """|d| on an integer grid of 2**-40 of the largest |d|: equal up to rounding means tied.

    Differences of discrete scores carry float noise (0.2 - 0.1 != 0.4 - 0.3); ranked raw, the
    noise would break real ties and turn would-be zeros into tiny non-zero differences.
    """
    import numpy as np

    largest = float(np.abs(d).max())
    if largest == 0.0:
        return np.zeros(d.size)
    keys: np.ndarray = np.rint(np.abs(d) / largest * 2.0**40)
    return keys
