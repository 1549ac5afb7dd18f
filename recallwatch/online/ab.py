"""A/B readouts from interaction logs: per-variant metrics, clustered intervals, SRM, power.

In an A/B test users (or sessions) are split between the current system (the *control*) and the
candidate (the *treatment*). Impressions of the same user are not independent (one user's habits
colour all their searches), so every figure here is computed per *unit*, the thing that was
randomised: each unit's impressions are first summed into a numerator and a denominator per
metric, and a metric is the ratio of the sums over the units of a variant. Its standard error
comes from the delta method on those per-unit sums (Deng et al. 2018), which is what clustering
by unit means; treating impressions as independent would make intervals too narrow.

Metrics, per impression (numerator / denominator):

- ``ctr``, click-through rate: clicked results / 1 (clicks per impression; each result once);
- ``abandonment``: 1 if nothing was clicked / 1 (no-result impressions included);
- ``time-to-click``: seconds from the impression to its first click / 1, impressions with a click
  only;
- ``conversion``: 1 if the impression led to a conversion / 1.

Checks that block a readout (exit 1): a sample-ratio mismatch (SRM: the units are not split as
the experiment intended, a chi-square test with p below ``srm_alpha``, which means the assignment
or the logging is broken and no difference can be trusted) and too few units per variant.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from recallwatch.errors import InputError, UsageError
from recallwatch.online._metrics import (
    METRIC_NAMES,
    METRICS,
    MetricName,
    contribution,
    unit_key,
)

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.online.cuped import Covariates
    from recallwatch.online.log import Impression

__all__ = [
    "METRICS",
    "METRIC_NAMES",
    "ABConfig",
    "ABReadout",
    "MetricName",
    "MetricReadout",
    "Unit",
    "UnitTable",
    "aggregate_units",
    "readout",
]

Unit = Literal["user", "session"]
Verdict = Literal["better", "worse", "mixed", "no difference", "inconclusive", "blocked"]


@dataclass(frozen=True)
class ABConfig:
    """Every setting a readout depends on; stored with the result."""

    metrics: tuple[MetricName, ...] = ("ctr",)
    unit: Unit = "user"
    control: str | None = None  # default: "A" if present, else the first variant by name
    alpha: float = 0.05
    power: float = 0.8
    min_effect: float = 0.05  # relative to control: the smallest change worth detecting
    srm_alpha: float = 0.001
    min_units: int = 100
    split: dict[str, float] | None = None  # expected share per variant; default equal
    sequential: bool = False  # verdicts from always-valid p-values (online.sequential)

    def __post_init__(self) -> None:
        if not self.metrics:
            raise UsageError("name at least one metric")
        for m in self.metrics:
            if m not in METRICS:
                raise UsageError(f"unknown metric {m!r}; valid: {', '.join(METRIC_NAMES)}")
        for name, value in (("alpha", self.alpha), ("power", self.power),
                            ("srm_alpha", self.srm_alpha)):
            if not 0.0 < value < 1.0:
                raise UsageError(f"{name} must be strictly between 0 and 1, got {value}")
        if not self.min_effect > 0.0:
            raise UsageError(f"min_effect must be > 0, got {self.min_effect}")
        if self.min_units < 2:
            raise UsageError(f"min_units must be at least 2, got {self.min_units}")

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": list(self.metrics), "unit": self.unit, "control": self.control,
                "alpha": self.alpha, "power": self.power, "min_effect": self.min_effect,
                "srm_alpha": self.srm_alpha, "min_units": self.min_units, "split": self.split,
                "sequential": self.sequential}


@dataclass(frozen=True)
class UnitTable:
    """Per-unit sums: ``variant[u]`` indexes ``variants``; ``num[m][u]``/``den[m][u]`` are unit u's
    numerator and denominator of ``metrics[m]``."""

    variants: list[str]
    metrics: tuple[MetricName, ...]
    variant: np.ndarray[Any, Any]  # int64[U]
    num: np.ndarray[Any, Any]  # float64[M, U]
    den: np.ndarray[Any, Any]  # float64[M, U]
    impressions: dict[str, int] = field(default_factory=dict)
    mixed_units: int = 0  # units seen in more than one variant, left out
    keys: list[str] = field(default_factory=list)  # the unit ids, aligned with ``variant``
    # --unit session only: users with several sessions, and those whose sessions all had one
    # variant (all of them: the experiment randomised users, not sessions)
    users_with_sessions: int = 0
    users_in_one_variant: int = 0


def aggregate_units(impressions: Iterable[Impression], *, unit: Unit = "user",
                    metrics: Sequence[MetricName] = ("ctr",),
                    source: str = "<log>") -> UnitTable:
    """Stream impressions into per-unit sums (memory: a few numbers per unit)."""
    import numpy as np

    metrics = tuple(metrics)
    m_count = len(metrics)
    units: dict[str, int] = {}
    variants: dict[str, int] = {}
    unit_variant = array("q")
    mixed: set[int] = set()
    sums = array("d")  # unit-major: 2 * M numbers per unit
    per_variant: dict[str, int] = {}
    user_variants: dict[str, set[int]] = {}
    user_sessions: dict[str, set[str]] = {}
    for imp in impressions:
        key = unit_key(imp, unit, source)
        if imp.variant is None:
            raise InputError(source=source, line=imp.line, record=imp.query_id,
                             field="variant", expected="the variant shown (an A/B log)",
                             found="<nothing>")
        v = variants.setdefault(imp.variant, len(variants))
        per_variant[imp.variant] = per_variant.get(imp.variant, 0) + 1
        if unit == "session" and imp.user is not None:
            user_variants.setdefault(imp.user, set()).add(v)
            user_sessions.setdefault(imp.user, set()).add(key)
        u = units.get(key)
        if u is None:
            u = units[key] = len(units)
            unit_variant.append(v)
            sums.extend([0.0] * (2 * m_count))
        elif unit_variant[u] != v:
            mixed.add(u)
        base = 2 * m_count * u
        for i, name in enumerate(metrics):
            value = contribution(name, imp, source)
            if value is not None:
                sums[base + 2 * i] += value
                sums[base + 2 * i + 1] += 1.0
    if not units:
        raise InputError(source=source, expected="at least one impression", found="<none>")
    table = np.frombuffer(sums, dtype=np.float64).reshape(len(units), m_count, 2)
    keep = np.ones(len(units), dtype=bool)
    keep[list(mixed)] = False
    names = sorted(variants, key=variants.__getitem__)
    several = [u for u, sessions in user_sessions.items() if len(sessions) > 1]
    return UnitTable(
        variants=names, metrics=metrics,
        variant=np.frombuffer(unit_variant, dtype=np.int64)[keep].copy(),
        num=table[keep, :, 0].T.copy(), den=table[keep, :, 1].T.copy(),
        impressions=per_variant, mixed_units=len(mixed),
        keys=[k for k, i in units.items() if keep[i]],
        users_with_sessions=len(several),
        users_in_one_variant=sum(1 for u in several if len(user_variants[u]) == 1),
    )


@dataclass(frozen=True)
class MetricReadout:
    name: MetricName
    values: dict[str, float]
    units: dict[str, int]
    delta: float
    relative_delta: float | None
    ci: tuple[float, float]
    p_value: float
    p_value_holm: float
    std_error: float
    mde: float
    relative_mde: float | None
    units_needed: int | None
    units_still_needed: int | None
    verdict: Verdict
    cuped: dict[str, Any] | None = None  # set with a pre-period covariate
    sequential: dict[str, Any] | None = None  # set with ABConfig.sequential

    def to_dict(self) -> dict[str, Any]:
        return {**({"cuped": self.cuped} if self.cuped is not None else {}),
                **({"sequential": self.sequential} if self.sequential is not None else {}),
            "variants": {v: _finite(x) for v, x in self.values.items()},
            "delta": _finite(self.delta), "relative_delta": _finite(self.relative_delta),
            "ci": [_finite(self.ci[0]), _finite(self.ci[1])], "p_value": self.p_value,
            "p_value_holm": self.p_value_holm, "std_error": _finite(self.std_error),
            "mde": _finite(self.mde), "relative_mde": _finite(self.relative_mde),
            "units_needed_per_variant": self.units_needed,
            "units_still_needed_per_variant": self.units_still_needed,
            "better": "higher" if METRICS[self.name].higher_is_better else "lower",
            "definition": METRICS[self.name].description, "verdict": self.verdict,
        }


@dataclass(frozen=True)
class ABReadout:
    """The readout: ``blocked`` readouts carry the reasons and no metric verdicts to act on."""

    config: ABConfig
    control: str
    treatment: str
    units: dict[str, int]
    impressions: dict[str, int]
    mixed_units: int
    srm_p_value: float
    srm_ok: bool
    expected_share: dict[str, float]
    metrics: dict[str, MetricReadout]
    verdict: Verdict
    reasons: list[str]

    @property
    def blocked(self) -> bool:
        return self.verdict == "blocked"

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reasons": self.reasons,
            "control": self.control,
            "treatment": self.treatment,
            "unit": self.config.unit,
            "units": self.units,
            "impressions": self.impressions,
            "mixed_units_excluded": self.mixed_units,
            "srm": {"p_value": self.srm_p_value, "ok": self.srm_ok,
                    "expected_share": self.expected_share, "threshold": self.config.srm_alpha,
                    "test": "chi-square goodness of fit of units per variant"},
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "method": "per-unit sums; ratio of sums per variant; delta-method standard errors "
                      "(clustered by unit); two-sided z-test; Holm across metrics",
            "config": self.config.to_dict(),
        }


def readout(table: UnitTable, config: ABConfig, *, source: str = "<log>",
            covariates: Covariates | None = None) -> ABReadout:
    """Compare the treatment with the control on every metric of ``table``; with
    ``covariates`` (pre-period values aligned with ``table.keys``), CUPED-adjusted."""
    control, treatment = _arms(table, config, source)
    split = _split_check(table, config, [control, treatment])
    estimates = [_estimate(table, config, m, (control, treatment), covariates)
                 for m in range(len(table.metrics))]
    metrics = _metric_readouts(estimates, config)
    reasons = _design_warnings(table, config) + _blocks(split, config)
    overall: Verdict = "blocked" if split.blocked else _overall(metrics)
    if not split.blocked:
        said = (_metric_reason(res, control, treatment, config) for res in metrics.values())
        reasons += [reason for reason in said if reason]
    return ABReadout(
        config=config, control=control, treatment=treatment, units=split.counts,
        impressions={v: table.impressions.get(v, 0) for v in (control, treatment)},
        mixed_units=table.mixed_units, srm_p_value=split.p_value, srm_ok=split.ok,
        expected_share=split.share, metrics=metrics, verdict=overall, reasons=reasons,
    )


@dataclass(frozen=True)
class _Split:
    """Units per variant against the split the experiment intended (the sample-ratio test)."""

    counts: dict[str, int]
    share: dict[str, float]
    p_value: float
    ok: bool
    small: list[str]  # variants under the minimum of units

    @property
    def blocked(self) -> bool:
        return not self.ok or bool(self.small)


@dataclass(frozen=True)
class _Estimate:
    """One metric's comparison before the correction across metrics."""

    name: MetricName
    values: dict[str, float]
    units: dict[str, int]
    delta: float
    se: float
    p: float
    ci: tuple[float, float]
    mde: float
    needed: int | None  # units per variant to detect the minimum effect
    still: int | None
    control_value: float
    extra: dict[str, Any]  # "cuped", "sequential" when asked for

    @property
    def tested_p(self) -> float:
        """The p-value the correction across metrics takes: the sequential one when asked."""
        return float(self.extra["sequential"]["p_value"]) if "sequential" in self.extra \
            else self.p


def _arms(table: UnitTable, config: ABConfig, source: str) -> tuple[str, str]:
    """(control, treatment): the log's two variants, the control as asked (default A, else the
    first by name)."""
    if len(table.variants) != 2:
        raise InputError(source=source, field="variant",
                         expected="exactly two variants in an A/B log",
                         found=f"<{len(table.variants)}: {', '.join(table.variants)}>")
    control = config.control or ("A" if "A" in table.variants else sorted(table.variants)[0])
    if control not in table.variants:
        raise UsageError(f"--control {control!r} is not a variant of the log; variants: "
                         f"{', '.join(table.variants)}")
    return control, next(v for v in table.variants if v != control)


def _split_check(table: UnitTable, config: ABConfig, order: list[str]) -> _Split:
    """Units per variant, the chi-square goodness-of-fit test of the intended split, and the
    variants with too few units."""
    import numpy as np
    from scipy import stats

    counts = {v: int(np.sum(table.variant == table.variants.index(v))) for v in order}
    share = {v: _expected_share(config, table.variants)[v] for v in order}
    observed = np.array([counts[v] for v in order], dtype=np.float64)
    expected = observed.sum() * np.array([share[v] for v in order])
    p = float(stats.chisquare(observed, expected).pvalue) if observed.sum() else 1.0
    return _Split(counts, share, p, p >= config.srm_alpha,
                  [v for v in order if counts[v] < config.min_units])


def _estimate(table: UnitTable, config: ABConfig, m: int, arms: tuple[str, str],
              covariates: Covariates | None) -> _Estimate:
    """Metric ``m``: each variant's ratio of per-unit sums, the difference with its delta-method
    standard error (CUPED-adjusted and with a confidence sequence when asked), the two-sided
    z-test, the smallest detectable effect and the units needed for ``config.min_effect``."""
    from scipy import stats

    control, treatment = arms
    masks = [table.variant == table.variants.index(v) for v in arms]
    (r_c, var_c, unit_var_c, n_c), (r_t, var_t, unit_var_t, n_t) = (
        _ratio(table.num[m][mask], table.den[m][mask]) for mask in masks)
    delta = r_t - r_c
    se = math.sqrt(var_c + var_t) if math.isfinite(var_c + var_t) else math.inf
    extra: dict[str, Any] = {}
    if covariates is not None and math.isfinite(se):
        delta, se = _cuped(table, covariates, m, masks, delta, se, extra)
    if config.sequential:
        extra["sequential"] = _sequential(config, delta, se, r_c)
    z_alpha = float(stats.norm.isf(config.alpha / 2.0))
    z_power = float(stats.norm.ppf(config.power))
    target = config.min_effect * abs(r_c)
    needed: int | None = None
    if target > 0.0 and math.isfinite(unit_var_c + unit_var_t):
        needed = max(2, math.ceil((z_alpha + z_power) ** 2 * (unit_var_c + unit_var_t)
                                  / target**2))
    return _Estimate(
        name=table.metrics[m], values={control: r_c, treatment: r_t},
        units={control: n_c, treatment: n_t}, delta=delta, se=se, p=_z_test(delta, se),
        ci=(delta - z_alpha * se, delta + z_alpha * se), mde=(z_alpha + z_power) * se,
        needed=needed, still=None if needed is None else max(0, needed - min(n_c, n_t)),
        control_value=r_c, extra=extra)


def _cuped(table: UnitTable, covariates: Covariates, m: int, masks: list[Any], delta: float,
           se: float, extra: dict[str, Any]) -> tuple[float, float]:
    """The CUPED-adjusted difference and standard error; the unadjusted ones kept in
    ``extra["cuped"]``."""
    from recallwatch.online.cuped import cuped

    groups = [(table.num[m][mask], table.den[m][mask], covariates.values[m][mask])
              for mask in masks]
    adjusted = cuped(groups, delta, se * se, int(covariates.present[m].sum()))
    extra["cuped"] = {**adjusted.to_dict(), "delta_unadjusted": delta,
                      "std_error_unadjusted": se}
    return adjusted.delta, math.sqrt(adjusted.variance)


def _sequential(config: ABConfig, delta: float, se: float, control_value: float
                ) -> dict[str, Any]:
    """The always-valid p-value and confidence sequence (mSPRT) of the difference."""
    from recallwatch.online.sequential import msprt

    tau2 = (config.min_effect * abs(control_value)) ** 2 or (se * se if se > 0 else 1.0)
    p_seq, low, high = msprt(delta, se * se, tau2, config.alpha)
    return {"p_value": float(p_seq), "confidence_sequence": [
        _finite(float(low)), _finite(float(high))], "mixing_sd": math.sqrt(tau2)}


def _z_test(delta: float, se: float) -> float:
    """Two-sided p-value of ``delta`` with standard error ``se`` (0 or 1 when ``se`` is 0 or not
    finite)."""
    from scipy import stats

    if se > 0.0 and math.isfinite(se):
        return float(2.0 * stats.norm.sf(abs(delta) / se))
    return 1.0 if delta == 0.0 or not math.isfinite(se) else 0.0


def _metric_readouts(estimates: list[_Estimate], config: ABConfig) -> dict[str, MetricReadout]:
    """Each metric's readout, its p-value Holm-corrected across the metrics."""
    from recallwatch.stats import holm

    adjusted = holm([e.tested_p for e in estimates]).tolist()
    out: dict[str, MetricReadout] = {}
    for e, p_holm in zip(estimates, adjusted, strict=True):
        out[e.name] = MetricReadout(
            name=e.name, values=e.values, units=e.units, delta=e.delta,
            relative_delta=e.delta / e.control_value if e.control_value else None, ci=e.ci,
            p_value=e.p, p_value_holm=p_holm, std_error=e.se, mde=e.mde,
            relative_mde=e.mde / abs(e.control_value) if e.control_value else None,
            units_needed=e.needed, units_still_needed=e.still,
            verdict=_metric_verdict(e, p_holm, config), cuped=e.extra.get("cuped"),
            sequential=e.extra.get("sequential"),
        )
    return out


def _metric_verdict(e: _Estimate, p_holm: float, config: ABConfig) -> Verdict:
    """better / worse when significant after Holm, no difference when the units sufficed to
    see the minimum effect, else inconclusive."""
    if p_holm <= config.alpha and e.delta != 0:
        return "better" if (e.delta > 0) == METRICS[e.name].higher_is_better else "worse"
    return "no difference" if e.still == 0 else "inconclusive"


def _design_warnings(table: UnitTable, config: ABConfig) -> list[str]:
    """What the log says about the design: sessions of users randomised as users, units that
    appeared in both variants."""
    out: list[str] = []
    if config.unit == "session" and table.users_with_sessions >= 2 and \
            table.users_in_one_variant == table.users_with_sessions:
        out.append(f"warning: every one of the {table.users_with_sessions} users with several "
                   "sessions saw one variant only: the experiment randomised users, so use "
                   "--unit user (one user's sessions are not independent; by session the "
                   "intervals are too narrow and the sample-ratio test too strict)")
    if table.mixed_units:
        out.append(f"{table.mixed_units} {config.unit}s appeared in both variants and were "
                   "left out (check the assignment)")
    return out


def _blocks(split: _Split, config: ABConfig) -> list[str]:
    """Why the readout is blocked: a sample-ratio mismatch, too few units."""
    out: list[str] = []
    if not split.ok:
        total = sum(split.counts.values())
        shares = ", ".join(f"{v} {n} ({n / total:.1%}, expected {split.share[v]:.1%})"
                           for v, n in split.counts.items())
        out.append(f"sample-ratio mismatch: {config.unit}s per variant {shares}, chi-square "
                   f"p = {split.p_value:.2g} < {config.srm_alpha:g}; the split or the logging "
                   "is broken, so no difference can be trusted")
    if split.small:
        out.append("too few units: " + ", ".join(f"{v} has {split.counts[v]} {config.unit}s"
                                                 for v in split.small)
                   + f" (at least {config.min_units} per variant)")
    return out


def _overall(metrics: dict[str, MetricReadout]) -> Verdict:
    """The readout's verdict from its metrics' (not blocked)."""
    verdicts = {m.verdict for m in metrics.values()}
    if {"better", "worse"} <= verdicts:
        return "mixed"
    if "worse" in verdicts:
        return "worse"
    if "better" in verdicts:
        return "better"
    return "no difference" if verdicts == {"no difference"} else "inconclusive"


def _metric_reason(res: MetricReadout, control: str, treatment: str, config: ABConfig) -> str:
    """The sentence a metric's verdict gets in the readout's reasons ("" for none)."""
    if res.verdict in ("better", "worse"):
        return (f"{res.name}: {treatment} is {res.verdict} ({res.values[control]:.4g} → "
                f"{res.values[treatment]:.4g}, p (Holm) = {res.p_value_holm:.2g})")
    if res.verdict == "inconclusive" and res.units_still_needed is not None:
        return (f"{res.name}: no significant difference yet; about {res.units_still_needed} "
                f"more {config.unit}s per variant are needed to detect a "
                f"{config.min_effect:.0%} change")
    if res.verdict == "no difference" and res.relative_mde is not None:
        return (f"{res.name}: no significant difference, and a change of "
                f"{config.min_effect:.0%} would have been detected (the smallest detectable is "
                f"{res.relative_mde:.1%})")
    return ""


def _finite(x: float | None) -> float | None:
    """JSON has no NaN or infinity: an undefined figure is null."""
    return x if x is not None and math.isfinite(x) else None


def _expected_share(config: ABConfig, variants: list[str]) -> dict[str, float]:
    if config.split is None:
        return {v: 1.0 / len(variants) for v in variants}
    unknown = sorted(set(config.split) - set(variants))
    missing = sorted(set(variants) - set(config.split))
    if unknown or missing:
        raise UsageError(f"--allocation must name exactly the variants of the log "
                         f"({', '.join(variants)}); found {', '.join(sorted(config.split))}")
    total = sum(config.split.values())
    if not total > 0 or any(not s > 0 for s in config.split.values()):
        raise UsageError("--allocation shares must be positive")
    return {v: config.split[v] / total for v in variants}


def _ratio(num: np.ndarray[Any, Any], den: np.ndarray[Any, Any]
           ) -> tuple[float, float, float, int]:
    """Ratio of sums, its delta-method variance, the per-unit variance (variance × units) and
    the number of units."""
    import numpy as np

    n = int(num.size)
    total = float(den.sum())
    if n == 0 or total == 0.0:
        return math.nan, math.inf, math.inf, n
    r = float(num.sum()) / total
    if n < 2:
        return r, math.inf, math.inf, n
    mean_den = total / n
    cov = np.cov(num, den, ddof=1)
    unit_var = float(cov[0, 0] - 2.0 * r * cov[0, 1] + r * r * cov[1, 1]) / mean_den**2
    unit_var = max(unit_var, 0.0)
    return r, unit_var / n, unit_var, n
