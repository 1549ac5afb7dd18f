"""Live signals against their alarm thresholds: what real traffic says about search health.

The signals themselves (no-result rate, click-through rate, abandonment, latency percentiles over a
time window of an interaction log) are computed by :func:`recallwatch.online.live.window_signals`;
this module holds the thresholds and turns a breach into a monitor alarm. It works on the
signals' plain dict (:meth:`recallwatch.online.LiveSignals.to_dict`), so the operations layer
needs nothing from the log reader.

Default thresholds are deliberately loose: they catch a broken system (a third of searches find
nothing, almost nobody clicks, a tail of seconds), not a slightly worse one. Set yours from a
healthy week of your own traffic.

A window's rate is a sample: with a few hundred impressions a no-result rate of 0.28 reads 0.31
one window in ten. So a signal alarms only when its whole 95 % interval lies past its threshold
(Wilson's for a share of impressions, the normal one from the clicks' spread for the
click-through rate, the log's distribution-free one for the latency p99, whose low end alone
decides when the window logged fewer than the 368 latencies its high end needs). A value past
the threshold whose interval reaches back is reported as within noise, not alarmed on.

Relative alarms catch the slightly worse one: the window is compared with a *baseline* (the
stretch of the log just before it), and a rate that got worse by at least ``max_relative_change``
(click-through rate down; no-result rate or abandonment up) alarms when a one-sided two-sample
z-test says the change is not chance (p below ``relative_alpha``). A CTR of 0.50 falling to 0.25
alarms though it stays far above any absolute minimum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from recallwatch.errors import InputError

__all__ = ["LIVE_SIGNALS", "LiveCheck", "LivePolicy", "check_live", "live_breached"]

_Z95 = 1.959963984540054  # the two-sided 95 % normal quantile


@dataclass(frozen=True)
class _Signal:
    label: str  # as the monitor prints it
    path: tuple[str, ...]  # where the value is in the signals dict
    bound: str  # the LivePolicy field holding its threshold
    upper: bool  # True: alarm above the threshold; False: alarm below it
    unit: str = ""


# The signals the monitor alarms on, in the order it prints them.
LIVE_SIGNALS: tuple[_Signal, ...] = (
    _Signal("no-result rate", ("no_result_rate",), "max_no_result_rate", upper=True),
    _Signal("click-through rate", ("ctr",), "min_ctr", upper=False),
    _Signal("abandonment", ("abandonment",), "max_abandonment", upper=True),
    _Signal("latency p99", ("latency_ms", "p99"), "max_latency_p99_ms", upper=True, unit=" ms"),
)


@dataclass(frozen=True)
class LivePolicy:
    """Alarm thresholds for the live signals; ``None`` switches one off.

    ``min_impressions``: a window with fewer impressions is reported but never alarms on a rate
    (a handful of searches says nothing); an empty window alarms (logging or traffic stopped).
    """

    max_no_result_rate: float | None = 0.30
    min_ctr: float | None = 0.05
    max_abandonment: float | None = 0.90
    max_latency_p99_ms: float | None = 2000.0
    min_impressions: int = 100
    max_relative_change: float | None = 0.20  # vs the baseline; None: no relative alarm
    relative_alpha: float = 0.01

    def __post_init__(self) -> None:
        for name, most in (("max_no_result_rate", 1.0), ("max_abandonment", 1.0),
                           ("min_ctr", math.inf)):  # CTR counts clicks: it may exceed 1
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and 0.0 <= value <= most):
                raise InputError(field=name, expected="a share in [0, 1]" if most == 1.0
                                 else "a non-negative number", found=value)
        p99 = self.max_latency_p99_ms
        if p99 is not None and not (math.isfinite(p99) and p99 > 0):
            raise InputError(field="max_latency_p99_ms", expected="a positive number of "
                             "milliseconds", found=p99)
        if self.min_impressions < 1:
            raise InputError(field="min_impressions", expected="at least 1",
                             found=self.min_impressions)
        change = self.max_relative_change
        if change is not None and not (math.isfinite(change) and 0.0 < change <= 1.0):
            raise InputError(field="max_relative_change", expected="a share in (0, 1], e.g. "
                             "0.2 for a 20 % change", found=change)
        if not 0.0 < self.relative_alpha < 1.0:
            raise InputError(field="relative_alpha", expected="strictly between 0 and 1",
                             found=self.relative_alpha)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LiveCheck:
    """The signals of one window, the policy they were held to, and the breaches."""

    signals: dict[str, Any]  # LiveSignals.to_dict(), plus "log": the log's summary
    policy: LivePolicy
    alarms: tuple[str, ...]
    notes: tuple[str, ...] = ()
    baseline: dict[str, Any] | None = None  # the baseline window's signals
    changes: tuple[dict[str, Any], ...] = ()  # each rate against the baseline

    def value(self, path: tuple[str, ...]) -> float | None:
        node: Any = self.signals
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        return float(node) if isinstance(node, int | float) else None

    def to_dict(self) -> dict[str, Any]:
        return {**self.signals, "thresholds": self.policy.to_dict(), "alarms": list(self.alarms),
                "notes": list(self.notes), "baseline": self.baseline,
                "changes": list(self.changes)}


def check_live(signals: Mapping[str, Any], policy: LivePolicy | None = None,
               baseline: Mapping[str, Any] | None = None) -> LiveCheck:
    """Hold the signals of a window (the dict of ``LiveSignals.to_dict()``) to ``policy``, and
    compare them with ``baseline`` (the signals of the stretch before) when given."""
    policy = policy or LivePolicy()
    check = LiveCheck(dict(signals), policy, ())
    n = int(signals.get("impressions") or 0)
    alarms: list[str] = []
    notes: list[str] = []
    if n == 0:
        alarms.append("live traffic: no impression in the window (has logging or traffic "
                      "stopped?)")
    elif n < policy.min_impressions:
        notes.append(f"live traffic: only {n} impressions in the window (under "
                     f"{policy.min_impressions}): rates reported, not alarmed on")
    else:
        for s in LIVE_SIGNALS:
            limit = getattr(policy, s.bound)
            value = check.value(s.path)
            if limit is None or value is None:
                continue
            alarm, note = _past(s, value, limit, signals, n)
            if alarm is not None:
                alarms.append(alarm)
            if note is not None:
                notes.append(note)
    changes = _relative(signals, baseline, policy) if baseline is not None else []
    alarms.extend(c["alarm"] for c in changes if c["alarm"])
    return LiveCheck(dict(signals), policy, tuple(alarms), tuple(notes),
                     None if baseline is None else dict(baseline), tuple(changes))


def _interval(s: _Signal, value: float, signals: Mapping[str, Any],
              n: int) -> tuple[float, float] | None:
    """The 95 % interval of a signal: Wilson's for a share of impressions, the normal one from
    the clicks' spread for the click-through rate (clicks per impression, which may exceed 1),
    the log's own distribution-free one for a latency percentile (None when the window logged
    too few latencies for it)."""
    if s.unit:
        ci = (signals.get("latency_ci_ms") or {}).get(s.path[-1])
        return None if not ci else (float(ci[0]), float(ci[1]))
    sd = signals.get("ctr_sd")
    if s.path == ("ctr",) and isinstance(sd, int | float):
        half = _Z95 * float(sd) / math.sqrt(n)
        return value - half, value + half
    from recallwatch.stats import wilson_interval

    low, high = wilson_interval(min(value, 1.0) * n, n)
    return float(low), float(high)


def _past(s: _Signal, value: float, limit: float, signals: Mapping[str, Any],
          n: int) -> tuple[str | None, str | None]:
    """(alarm, note) of one signal against its threshold: an alarm when its whole 95 % interval
    lies past the threshold; a value past it whose interval reaches back is within noise (a
    note); a latency p99 from too few latencies for a whole interval is judged by its low end
    alone."""
    past = (value > limit) if s.upper else (value < limit)
    if not past:
        return None, None
    word = "above the maximum" if s.upper else "under the minimum"
    said = f"live {s.label} is {value:.4g}{s.unit}, {word} {limit:g}{s.unit}"
    over = f"{signals.get('latency_count', 0):,} logged latencies" if s.unit else \
        f"{n:,} impressions"
    ci = _interval(s, value, signals, n)
    if ci is not None:
        interval = f"95 % interval {ci[0]:.4g}–{ci[1]:.4g}{s.unit} over {over}"
        if (ci[0] > limit) if s.upper else (ci[1] < limit):
            return f"{said} ({interval})", None
        return None, (f"{said}, but its {interval} reaches {'below' if s.upper else 'above'} "
                      "it: within noise, not an alarm")
    low = signals.get("latency_p99_low_ms")
    if isinstance(low, int | float) and low > limit:
        return (f"{said} (the low end of its 95 % interval, {low:.4g} ms over {over}, is above "
                "it; the high end needs 368)"), None
    if not isinstance(low, int | float):
        return None, f"{said}, from {over}: no interval stated: not judged, not an alarm"
    return None, (f"{said}, from {over}: the low end of its 95 % interval, {low:.4g} ms, is not "
                  "above the maximum, and the high end needs 368: not judged, not an alarm")


# (label, key, worse when it goes up)
_RELATIVE = (("click-through rate", "ctr", False), ("no-result rate", "no_result_rate", True),
             ("abandonment", "abandonment", True))


def _relative(now: Mapping[str, Any], before: Mapping[str, Any],
              policy: LivePolicy) -> list[dict[str, Any]]:
    """Each rate of the window against the baseline: relative change, one-sided p-value (the
    change is for the worse), and the alarm text when both cross their bounds."""
    n, m = int(now.get("impressions") or 0), int(before.get("impressions") or 0)
    if policy.max_relative_change is None or min(n, m) < policy.min_impressions:
        return []
    out = []
    for label, key, up in _RELATIVE:
        x, y = now.get(key), before.get(key)
        if not isinstance(x, int | float) or not isinstance(y, int | float) or y == 0:
            continue
        if key == "ctr":
            sd_x, sd_y = now.get("ctr_sd"), before.get("ctr_sd")
            if not isinstance(sd_x, int | float) or not isinstance(sd_y, int | float):
                continue
            var_x, var_y = sd_x**2, sd_y**2
        else:
            var_x, var_y = x * (1 - x), y * (1 - y)
        se = math.sqrt(var_x / n + var_y / m)
        worse = (x - y) if up else (y - x)
        p = 0.5 * math.erfc(worse / se / math.sqrt(2.0)) if se > 0 else (0.0 if worse > 0
                                                                          else 1.0)
        change = (x - y) / y
        alarm = ""
        if worse / y >= policy.max_relative_change and p < policy.relative_alpha:
            alarm = (f"live {label} went from {y:.4g} to {x:.4g} ({change:+.0%} against the "
                     f"baseline, {m:,} impressions before, {n:,} in the window; one-sided "
                     f"p = {p:.2g})")
        out.append({"signal": key, "baseline": y, "window": x, "relative_change": change,
                    "p_value": p, "alarm": alarm})
    return out


def live_breached(payload: Mapping[str, Any]) -> bool:
    """Whether a recorded monitor run's live traffic crossed a threshold (its ``live.alarms``)."""
    live = payload.get("live")
    return isinstance(live, Mapping) and bool(live.get("alarms"))
