"""Sequential testing: p-values and intervals that stay valid however often a team looks.

A fixed-horizon test (the z-test of the readout) is valid only if the data are looked at once,
at a sample size fixed in advance. Looking every day and stopping at the first p < 0.05 makes a
false positive far likelier than 5 % (the test gets thirty chances). The mixture sequential
probability ratio test (mSPRT; Robbins 1970, Johari et al. 2017) gives instead an *always-valid*
p-value and a *confidence sequence*: whenever the experiment is stopped, for whatever reason, the
chance that the p-value ever dropped below alpha under no real difference is at most alpha, and
the chance that the interval ever missed the true difference is at most alpha.

For an estimated difference ``δ`` with variance ``V`` (from the delta method, as the readout's)
and a normal mixture of alternatives with variance ``τ²``, the likelihood ratio is

    Λ = sqrt(V / (V + τ²)) · exp(τ² δ² / (2 V (V + τ²)))

the always-valid p-value is min(1, 1 / Λ) (taken as the smallest seen so far when looks are
repeated) and the confidence sequence is δ ± sqrt(V (V + τ²) / τ² · (2 log(1 / α) + log((V + τ²)
/ V))). ``τ`` sets where the test is most powerful; the readout takes the smallest change worth
detecting (``--min-effect`` times the control's value). The price of peeking freely: the
interval is wider than the fixed-horizon one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["msprt"]

Array = np.ndarray[Any, Any]


def msprt(delta: Any, variance: Any, tau2: float, alpha: float) -> tuple[Array, Array, Array]:
    """Always-valid p-values and confidence-sequence bounds (low, high) of the differences
    ``delta`` with variances ``variance`` (arrays or scalars, broadcast). A variance that is not
    positive and finite gives p = 1 and an unbounded interval."""
    d = np.asarray(delta, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    ok = np.isfinite(v) & (v > 0.0) & np.isfinite(d)
    v_safe = np.where(ok, v, 1.0)
    d_safe = np.where(ok, d, 0.0)
    total = v_safe + tau2
    log_lambda = 0.5 * np.log(v_safe / total) + tau2 * d_safe**2 / (2.0 * v_safe * total)
    p = np.where(ok, np.minimum(1.0, np.exp(-np.maximum(log_lambda, 0.0))), 1.0)
    half = np.sqrt(v_safe * total / tau2 * (2.0 * np.log(1.0 / alpha) + np.log(total / v_safe)))
    low = np.where(ok, d_safe - half, -np.inf)
    high = np.where(ok, d_safe + half, np.inf)
    return p, low, high
