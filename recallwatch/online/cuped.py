"""CUPED: a difference with less noise, from what each unit did before the experiment.

Users differ a lot (some click on everything), and that spread is most of the noise in an A/B
difference. CUPED (Deng, Xu, Kohavi & Walker 2013) subtracts the part of each unit's metric that
its own pre-period value (the same metric over a stretch before the experiment, from a
*pre-period log*) predicts: with ``L`` the unit's contribution to its variant's metric (the
delta method's per-unit term) and ``X`` its pre-period value,

    θ = Σ_v cov_v(L, X) / Σ_v var_v(X)          (pooled within the variants)
    δ_cuped = δ − θ (mean_t(X) − mean_c(X)),    V_cuped = Σ_v var_v(L − θ X) / n_v

Assignment is random and the pre-period comes before it, so X is independent of the variant and
the adjusted difference estimates the same thing with a variance smaller by about the squared
correlation of L and X. A unit absent from the pre-period log takes the mean of X (it then
contributes no reduction, and no bias). The readout reports the variance reduction.

The pre-period log has the interaction log's format (a ``variant`` is not needed): it is the
same contract, read over an earlier time range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallwatch.online._metrics import MetricName, contribution, unit_key

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.online.log import Impression

__all__ = ["Covariates", "CupedResult", "cuped", "pre_period_covariates"]


@dataclass(frozen=True)
class Covariates:
    """``values[m][u]``: unit u's pre-period value of metric m (imputed where absent);
    ``present[m][u]``: whether the unit had pre-period data for it."""

    values: np.ndarray[Any, Any]  # float64[M, U]
    present: np.ndarray[Any, Any]  # bool[M, U]


def pre_period_covariates(impressions: Iterable[Impression], *, unit: str,
                          metrics: Sequence[MetricName], keys: Sequence[str],
                          source: str = "<pre-period log>") -> Covariates:
    """Each unit's pre-period metric values (ratio of its sums), aligned with ``keys``."""
    import numpy as np

    index = {k: i for i, k in enumerate(keys)}
    num = np.zeros((len(metrics), len(keys)))
    den = np.zeros((len(metrics), len(keys)))
    for imp in impressions:
        key = unit_key(imp, unit, source)
        u = index.get(key)
        if u is None:
            continue  # a unit not in the experiment
        for m, name in enumerate(metrics):
            value = contribution(name, imp, source)
            if value is not None:
                num[m, u] += value
                den[m, u] += 1.0
    present = den > 0
    values = np.divide(num, den, out=np.zeros_like(num), where=present)
    for m in range(len(metrics)):
        if present[m].any():
            values[m, ~present[m]] = values[m, present[m]].mean()
    return Covariates(values, present)


@dataclass(frozen=True)
class CupedResult:
    delta: float
    variance: float
    theta: float
    variance_reduction: float  # 1 − V_cuped / V
    units_with_pre_period: int

    def to_dict(self) -> dict[str, Any]:
        return {"theta": self.theta, "variance_reduction": self.variance_reduction,
                "units_with_pre_period": self.units_with_pre_period}


def cuped(groups: Sequence[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any],
                                 np.ndarray[Any, Any]]],
          delta: float, variance: float, present: int) -> CupedResult:
    """Adjust ``delta`` (treatment − control, variance ``variance``) with the covariate. Each
    group is (num, den, x) of one variant's units: control first, then treatment."""
    import numpy as np

    parts = []
    for num, den, x in groups:
        n = num.size
        if n < 2 or den.sum() == 0:
            return CupedResult(delta, variance, 0.0, 0.0, present)
        r = num.sum() / den.sum()
        lin = (num - r * den) / den.mean()
        parts.append((lin, x, n))
    cov = sum(float(np.cov(lin, x, ddof=1)[0, 1]) for lin, x, _ in parts)
    var_x = sum(float(np.var(x, ddof=1)) for _, x, _ in parts)
    theta = cov / var_x if var_x > 0 else 0.0
    (_, x_c, _), (_, x_t, _) = parts
    adjusted = delta - theta * (float(x_t.mean()) - float(x_c.mean()))
    new_var = sum(float(np.var(lin - theta * x, ddof=1)) / n for lin, x, n in parts)
    reduction = 1.0 - new_var / variance if variance > 0 and np.isfinite(variance) else 0.0
    return CupedResult(adjusted, new_var, theta, reduction, present)
