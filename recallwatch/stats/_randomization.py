"""Paired randomization (Fisher sign-flip) test, exact or Monte Carlo, reproducible by seed.

Under the null hypothesis that A and B are exchangeable on every query, each difference
``d_i = b_i - a_i`` is as likely to have had the opposite sign. The test statistic is the mean
difference; the two-sided p-value is the share of sign assignments whose |mean| is at least the
observed one.

- **Exact** when the ``2**m`` assignments of the ``m`` non-zero differences fit in
  ``n_resamples`` (zeros are dropped: flipping them changes nothing, so the p-value is the same and
  the enumeration is smaller). Half of them are enumerated, since |statistic| is symmetric under
  flipping every sign.
- **Monte Carlo** otherwise, with ``p = (hits + 1) / (n_resamples + 1)``: the observed assignment
  counts as one of the draws (Phipson & Smyth, 2010). This keeps p > 0, makes the test valid
  (never anti-conservative) at every ``n_resamples``, and converges to the exact p-value.

Reproducibility: the signs come from ``numpy.random.Generator(PCG64(seed))`` as raw 64-bit words,
64 signs per word, in blocks whose size depends only on the number of differences, so the same
inputs and seed give the identical p-value on every call, machine and block of work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallwatch.errors import UsageError
from recallwatch.stats._paired import TestResult

if TYPE_CHECKING:
    import numpy as np

__all__ = ["exact_sign_flip_pvalue", "randomization_test"]

# About 4M sign cells per block: tens of MB at most, whatever the number of queries.
_BLOCK_CELLS = 1 << 22


def randomization_test(d: np.ndarray, *, seed: int, n_resamples: int) -> TestResult:
    """Two-sided sign-flip test of mean(d) = 0 over paired differences ``d`` (validated, 1-D)."""
    import numpy as np

    if n_resamples < 1:
        raise UsageError(f"n_resamples must be at least 1, got {n_resamples}")
    n = int(d.size)
    values = d[d != 0.0]
    statistic = float(d.mean())
    m = int(values.size)
    if m == 0:
        return TestResult("randomization", statistic, 1.0, n, "exact", 0)
    if m < 63 and (1 << m) <= n_resamples:
        return TestResult("randomization", statistic, exact_sign_flip_pvalue(values), n,
                          "exact", 0)
    rng = np.random.Generator(np.random.PCG64(seed))
    observed, tol = _observed(values)
    words = (m + 63) // 64
    block = max(1, _BLOCK_CELLS // (words * 64))
    hits = 0
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        raw = rng.bit_generator.random_raw((rows, words))
        # Little-endian byte order pinned so the sign of each difference is the same bit on
        # every platform.
        flips = np.unpackbits(raw.astype("<u8").view(np.uint8), axis=1, count=m,
                              bitorder="little")
        hits += _count_extreme(values, flips, observed, tol)
    p = (hits + 1) / (n_resamples + 1)
    return TestResult("randomization", statistic, p, n, "monte-carlo", n_resamples)


def exact_sign_flip_pvalue(values: np.ndarray) -> float:
    """Exact two-sided p of the sign-flip test of sum(values) = 0, by full enumeration.

    ``values`` must be non-empty and short (``2**(len-1)`` assignments are enumerated).
    """
    import numpy as np

    m = int(values.size)
    observed, tol = _observed(values)
    # The last value keeps its sign: the other half of the assignments mirrors these.
    total = 1 << (m - 1)
    shifts = np.arange(m - 1, dtype=np.uint64)
    block = max(1, _BLOCK_CELLS // m)
    hits = 0
    for start in range(0, total, block):
        codes = np.arange(start, min(total, start + block), dtype=np.uint64)
        flips = np.zeros((codes.size, m), dtype=np.uint8)
        flips[:, : m - 1] = (codes[:, None] >> shifts) & np.uint64(1)
        hits += _count_extreme(values, flips, observed, tol)
    return hits / total


def _observed(values: np.ndarray) -> tuple[float, float]:
    """|sum(values)| and the rounding tolerance under which two sums count as equal.

    Sums of the same numbers in another order differ by rounding; without the tolerance an
    assignment that ties the observed sum (common: metric values are discrete) could be missed.
    """
    import numpy as np

    return abs(float(values.sum())), 1e-10 * float(np.abs(values).sum())


def _count_extreme(values: np.ndarray, flips: np.ndarray, observed: float, tol: float) -> int:
    """How many rows of ``flips`` (1 = flip that sign) give |sum| >= observed - tol."""
    import numpy as np

    # sum(s_i v_i) with s_i = 1 - 2 flip_i is sum(v) - 2 * flips @ v: one matrix-vector product.
    sums = float(values.sum()) - 2.0 * (flips @ values)
    return int(np.count_nonzero(np.abs(sums) >= observed - tol))
