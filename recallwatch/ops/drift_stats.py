"""Drift as a statistical test: are two samples of embeddings drawn from the same distribution?

* **MMD²** (maximum mean discrepancy, squared): how far apart the two samples' average kernel
  embeddings are, with a Gaussian (RBF) kernel ``exp(-d² / (2 h²))`` whose width ``h`` is the
  median distance between the pooled rows (the median heuristic). Its **p-value** comes from a
  seeded permutation test: the rows are shuffled between the two sides many times, and the
  p-value is the share of shuffles (counting the observed split) whose MMD² is at least the
  observed one. A small p-value means the difference is unlikely to be chance.
* **per-dimension summaries**, as Evidently reports them: the two-sample Kolmogorov–Smirnov
  test (scipy's ``ks_2samp``, asymptotic p-values) and the population stability index (PSI,
  over ten bins cut at the reference side's deciles) of each embedding dimension; the share of
  dimensions drifted (KS p-value < 0.05, or PSI > 0.1) and the worst dimensions.

Cost is bounded: each side is subsampled (seeded) to at most ``max_rows`` rows, recorded in the
result.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import ks_2samp

from recallwatch.errors import InputError

__all__ = ["KS_ALPHA", "PSI_DRIFT", "DriftTest", "drift_test", "mmd_permutation_test",
           "out_of_reach", "permutations_for", "psi_per_dimension"]

MAX_ROWS = 1000  # per side
PERMUTATIONS = 200
MAX_PERMUTATIONS = 20_000
_BLOCK = 256  # permutations scored at once (memory: a block × the pooled rows)
KS_ALPHA = 0.05  # a dimension drifted when its KS p-value is under this (Evidently's default)
PSI_DRIFT = 0.1  # a dimension drifted when its PSI is above this (Evidently's default)
_PSI_BINS = 10
_PSI_EMPTY = 1e-4  # share given to an empty bin, so that the logarithm stays finite
_WORST = 5


@dataclass(frozen=True)
class DriftTest:
    mmd2: float  # squared maximum mean discrepancy, RBF kernel
    p_value: float  # permutation test of MMD²
    permutations: int
    bandwidth: float  # the kernel width h (median distance between pooled rows)
    reference_rows: int  # the subsample tested on each side: at most max_rows
    current_rows: int
    max_rows: int
    ks_share_drifted: float  # share of dimensions with KS p-value < KS_ALPHA
    psi_share_drifted: float  # share of dimensions with PSI > PSI_DRIFT
    worst_ks: list[dict[str, Any]]  # [{dimension, statistic, p_value}], largest statistic first
    worst_psi: list[dict[str, Any]]  # [{dimension, psi}], largest first
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def permutations_for(alpha: float | None) -> int:
    """Shuffles enough for a p-value held to ``alpha`` (an alarm threshold): the smallest
    p-value the test can give, ``1 / (1 + permutations)``, a tenth of ``alpha``, so that a
    threshold is never out of the test's reach and the p-value near it is not coarse; at least
    :data:`PERMUTATIONS`, at most :data:`MAX_PERMUTATIONS`."""
    if alpha is None or alpha <= 0:
        return PERMUTATIONS
    return max(PERMUTATIONS, min(MAX_PERMUTATIONS, math.ceil(10.0 / alpha - 1e-9) - 1))


def out_of_reach(alpha: float, permutations: int) -> str | None:
    """Why a p-value threshold ``alpha`` can never be crossed by a test of ``permutations``
    shuffles (its smallest p-value is ``1 / (1 + permutations)``), or None."""
    smallest = 1.0 / (1 + permutations)
    if alpha >= smallest:
        return None
    return (f"drift_alarm_p {alpha:g} is under the smallest p-value {permutations:,} "
            f"permutations can give ({smallest:.2g}): the drift alarm cannot fire; set "
            f"drift_alarm_p to at least {smallest:.2g}")


def _subsample(x: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    if len(x) <= n:
        return x
    return x[np.sort(rng.choice(len(x), n, replace=False))]


def _sq_distances(z: np.ndarray) -> np.ndarray:
    sq = (z * z).sum(axis=1)
    d2: np.ndarray = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (z @ z.T), 0.0)
    return d2


def mmd_permutation_test(x: np.ndarray, y: np.ndarray, *, permutations: int = PERMUTATIONS,
                         seed: int = 0) -> tuple[float, float, float]:
    """(MMD², p-value, bandwidth) of samples ``x`` and ``y`` (rows are points). The biased
    (V-statistic) MMD² with an RBF kernel of median-heuristic width; the p-value is
    ``(1 + shuffles at least as large) / (1 + permutations)``."""
    if permutations < 1:
        raise InputError(field="permutations", expected="at least 1 permutation",
                         found=permutations)
    z = np.concatenate([x, y]).astype(np.float64)
    d2 = _sq_distances(z)
    off = d2[np.triu_indices(len(z), k=1)]
    h2 = float(np.median(off[off > 0])) if np.any(off > 0) else 1.0
    kernel = np.exp(-d2 / (2.0 * h2))
    n, m = len(x), len(y)

    def weights(is_x: np.ndarray) -> np.ndarray:
        return np.where(is_x, 1.0 / n, -1.0 / m)

    labels = np.arange(n + m) < n
    w = weights(labels)
    observed = float(w @ kernel @ w)
    rng = np.random.default_rng(seed)
    above = 0
    for start in range(0, permutations, _BLOCK):
        shuffled = np.stack([weights(rng.permutation(labels))
                             for _ in range(min(_BLOCK, permutations - start))])
        stats = np.einsum("pi,pi->p", shuffled @ kernel, shuffled)
        # the tolerance keeps a shuffle equal to the observed split from losing to rounding
        above += int((stats >= observed - 1e-12).sum())
    return observed, (1 + above) / (1 + permutations), float(np.sqrt(h2))


def psi_per_dimension(reference: np.ndarray, current: np.ndarray,
                      bins: int = _PSI_BINS) -> np.ndarray:
    """Population stability index of each column: ``Σ (c - r) · ln(c / r)`` over bins cut at the
    reference column's quantiles (r, c: the share of each side's rows in the bin; an empty bin
    counts as 0.0001)."""
    out = np.empty(reference.shape[1])
    for j in range(reference.shape[1]):
        edges = np.unique(np.quantile(reference[:, j], np.linspace(0, 1, bins + 1))[1:-1])
        r = np.bincount(np.searchsorted(edges, reference[:, j], side="right"),
                        minlength=len(edges) + 1) / len(reference)
        c = np.bincount(np.searchsorted(edges, current[:, j], side="right"),
                        minlength=len(edges) + 1) / len(current)
        r, c = np.maximum(r, _PSI_EMPTY), np.maximum(c, _PSI_EMPTY)
        out[j] = float(((c - r) * np.log(c / r)).sum())
    return out


def drift_test(reference: np.ndarray, current: np.ndarray, *, max_rows: int = MAX_ROWS,
               permutations: int = PERMUTATIONS, seed: int = 0) -> DriftTest:
    """Two-sample drift test of ``current`` embeddings against ``reference`` ones (same
    dimensions), each side subsampled to at most ``max_rows`` rows with ``seed``."""
    if reference.ndim != 2 or current.ndim != 2 or reference.shape[1] != current.shape[1]:
        raise InputError(field="embeddings", expected="two matrices with the same number of "
                         "dimensions", found=f"shapes {reference.shape} and {current.shape}")
    if len(reference) < 2 or len(current) < 2:
        raise InputError(field="embeddings", expected="at least 2 rows on each side",
                         found=f"{len(reference)} and {len(current)} rows")
    if max_rows < 2:
        raise InputError(field="max_rows", expected="at least 2 rows per side", found=max_rows)
    rng = np.random.default_rng(seed)
    ref = _subsample(np.asarray(reference, dtype=np.float64), max_rows, rng)
    cur = _subsample(np.asarray(current, dtype=np.float64), max_rows, rng)
    mmd2, p_value, bandwidth = mmd_permutation_test(ref, cur, permutations=permutations,
                                                    seed=seed)
    ks = ks_2samp(ref, cur, axis=0, method="asymp")  # the exact one can fail, with a warning
    ks_stat, ks_p = np.atleast_1d(ks.statistic), np.atleast_1d(ks.pvalue)
    psi = psi_per_dimension(ref, cur)
    by_ks = np.argsort(-ks_stat, kind="stable")[:_WORST]
    by_psi = np.argsort(-psi, kind="stable")[:_WORST]
    return DriftTest(
        mmd2=mmd2, p_value=p_value, permutations=permutations, bandwidth=bandwidth,
        reference_rows=len(ref), current_rows=len(cur), max_rows=max_rows,
        ks_share_drifted=float((ks_p < KS_ALPHA).mean()),
        psi_share_drifted=float((psi > PSI_DRIFT).mean()),
        worst_ks=[{"dimension": int(j), "statistic": float(ks_stat[j]),
                   "p_value": float(ks_p[j])} for j in by_ks],
        worst_psi=[{"dimension": int(j), "psi": float(psi[j])} for j in by_psi],
        seed=seed,
    )
