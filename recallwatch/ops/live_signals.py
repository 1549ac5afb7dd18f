"""Live signals against their alarm thresholds: what real traffic says about search health.

The signals themselves (no-result rate, click-through rate, abandonment, latency percentiles over a
time window of an interaction log) are computed by :func:`recallwatch.online.live.window_signals`;
this module holds the thresholds and turns a breach into a monitor alarm. It works on the
signals' plain dict (:meth:`recallwatch.online.LiveSignals.to_dict`), so the operations layer
needs nothing from the log reader.

Default thresholds are deliberately loose: they catch a broken system (a third of searches find
nothing, almost nobody clicks, a tail of seconds), not a slightly worse one. Set yours from a
healthy week of your own traffic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from recallwatch.errors import InputError

__all__ = ["LIVE_SIGNALS", "LiveCheck", "LivePolicy", "check_live", "live_breached"]


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LiveCheck:
    """The signals of one window, the policy they were held to, and the breaches."""

    signals: dict[str, Any]  # LiveSignals.to_dict(), plus "log": the log's summary
    policy: LivePolicy
    alarms: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def value(self, path: tuple[str, ...]) -> float | None:
        node: Any = self.signals
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        return float(node) if isinstance(node, int | float) else None

    def to_dict(self) -> dict[str, Any]:
        return {**self.signals, "thresholds": self.policy.to_dict(), "alarms": list(self.alarms),
                "notes": list(self.notes)}


def check_live(signals: Mapping[str, Any], policy: LivePolicy | None = None) -> LiveCheck:
    """Hold the signals of a window (the dict of ``LiveSignals.to_dict()``) to ``policy``."""
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
            if (value > limit) if s.upper else (value < limit):
                word = "above the maximum" if s.upper else "under the minimum"
                alarms.append(f"live {s.label} is {value:.4g}{s.unit}, {word} {limit:g}{s.unit} "
                              f"({n:,} impressions)")
    return LiveCheck(dict(signals), policy, tuple(alarms), tuple(notes))


def live_breached(payload: Mapping[str, Any]) -> bool:
    """Whether a recorded monitor run's live traffic crossed a threshold (its ``live.alarms``)."""
    live = payload.get("live")
    return isinstance(live, Mapping) and bool(live.get("alarms"))
