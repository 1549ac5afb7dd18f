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
64 signs per word (bit i of a draw flips the i-th non-zero difference), drawn in order, so the
same inputs and seed give the identical p-value on every call and machine, whatever the block
size of the work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallwatch.errors import UsageError
from recallwatch.stats._result import TestResult

if TYPE_CHECKING:
    import numpy as np

__all__ = ["exact_sign_flip_pvalue", "randomization_test"]

# About a million (draw, byte) cells per block: ~16 MB of scratch, whatever the number of queries.
_BLOCK_CELLS = 1 << 20


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
    counter = _ExtremeCounter(values)
    words = (m + 63) // 64
    block = max(1, _BLOCK_CELLS // (words * 8))
    hits = 0
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        hits += counter.count(rng.bit_generator.random_raw((rows, words)))
    p = (hits + 1) / (n_resamples + 1)
    return TestResult("randomization", statistic, p, n, "monte-carlo", n_resamples)


def exact_sign_flip_pvalue(values: np.ndarray) -> float:
    """Exact two-sided p of the sign-flip test of sum(values) = 0, by full enumeration.

    ``values`` must hold 1 to 62 numbers (``2**(len-1)`` assignments are enumerated).
    """
    import numpy as np

    counter = _ExtremeCounter(values)
    # Assignment k flips the values whose bit is set in k. The last value keeps its sign: the
    # other half of the assignments mirrors these and has the same |sum|.
    total = 1 << (int(values.size) - 1)
    block = max(1, _BLOCK_CELLS // 8)
    hits = 0
    for start in range(0, total, block):
        codes = np.arange(start, min(total, start + block), dtype=np.uint64)
        hits += counter.count(codes[:, None])
    return hits / total


class _ExtremeCounter:
    """Counts sign assignments whose |sum| reaches the observed |sum(values)|.

    An assignment is a row of 64-bit words, bit i set meaning "flip value i"; its sum is
    ``sum(values) - 2 * (sum of the flipped values)``. The flipped sum is read eight signs at a
    time from per-byte tables (``tables[j, byte]`` = sum of the values of byte j's set bits):
    one lookup per byte instead of unpacking every bit and a matrix product, which is several
    times faster and needs no BLAS threads.
    """

    def __init__(self, values: np.ndarray) -> None:
        import numpy as np

        m = int(values.size)
        self.n_bytes = (m + 7) // 8
        padded = np.zeros(self.n_bytes * 8)
        padded[:m] = values
        bit_of = (np.arange(256)[:, None] >> np.arange(8)) & 1  # byte value -> its 8 bits
        self.tables = (padded.reshape(self.n_bytes, 8) @ bit_of.T.astype(np.float64)).ravel()
        self.offsets = np.arange(self.n_bytes, dtype=np.intp) * 256
        self.total = float(values.sum())
        self.observed = abs(self.total)
        # Sums of the same numbers in another order differ by rounding; without a tolerance an
        # assignment that ties the observed sum (common: metric values are discrete) is missed.
        self.tol = 1e-10 * float(np.abs(values).sum())

    def count(self, words: np.ndarray) -> int:
        import numpy as np

        # Little-endian bytes pinned: bit i of a word is the same sign on every platform.
        data = np.ascontiguousarray(words, dtype="<u8").view(np.uint8)[:, : self.n_bytes]
        flipped = self.tables[data + self.offsets].sum(axis=1)
        sums = self.total - 2.0 * flipped
        return int(np.count_nonzero(np.abs(sums) >= self.observed - self.tol))
