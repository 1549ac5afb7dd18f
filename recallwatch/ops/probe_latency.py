"""The probes' latency against its cap, with its spread: what the monitor alarms on for the store's
live search and for a pipeline.

A p99 of the probe set's own calls is the slowest call or two of a few dozen: one call that met a
busy moment, and the cap is crossed though nothing changed. So, as the gate's latency and cost
rules do (:mod:`recallwatch.acceptance.cost`):

* with a cap, the probes are searched again in rounds (probe after probe, one call each) until the
  calls reach what a p99 needs (368, :func:`recallwatch.stats.calls_needed`) or the rounds have
  taken 10 s, whichever comes first;
* each quantile is stated with its distribution-free 95 % interval (from the order statistics of
  the calls, no shape assumed), and only from the calls it needs;
* the cap alarms only when the p99's **whole interval** lies above it, that is when its low end
  does: the true p99 is then over the cap but for a 2.5 % chance. A p99 over the cap whose
  interval reaches below it is reported *within noise*, not alarmed on. The low end needs far
  fewer calls than the whole interval (:func:`recallwatch.stats.quantile_low_end`), so a store
  slow enough that the rounds run out of time before 368 calls is still judged by it; what such
  calls cannot show is a p99 *under* the cap, so then the report says it could not judge.

The cap is absolute: a machine busy with other work makes the same index slower, and a cap the
load of the moment crosses is crossed for the users too. What the rule removes is the alarm from
one slow call among too few (docs/measured-figures.md measures both).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from recallwatch.acceptance.retrieve import JUDGED_CALLS, JUDGED_SECONDS
from recallwatch.stats import Quantile, quantile, quantile_low_end

__all__ = ["LatencyCheck", "LatencyStatus", "latency_check", "latency_figures", "timed_rounds"]

LEVEL = 0.95
LatencyStatus = Literal["no cap", "within", "within noise", "over", "not judged"]
Clock = Callable[[], float]


def timed_rounds(search_one: Callable[[int], object], probes: int, first: Sequence[float], *,
                 clock: Clock = time.perf_counter, calls: int = JUDGED_CALLS,
                 seconds: float = JUDGED_SECONDS) -> list[float]:
    """``first`` (the seconds of the probes' own pass, one call each) and the probes searched
    again, ``search_one(i)`` for probe ``i`` in turn, until there are ``calls`` calls or the
    rounds have taken ``seconds``."""
    out = [float(s) for s in first]
    if probes <= 0:
        return out
    start, i = clock(), 0
    while len(out) < calls and clock() - start < seconds:
        t0 = clock()
        search_one(i % probes)
        out.append(clock() - t0)
        i += 1
    return out


def latency_figures(ms: np.ndarray) -> dict[str, float]:
    """p50, p99 and mean of per-call milliseconds (the monitor's ``latency_ms``)."""
    return {"p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)),
            "mean": float(ms.mean())}


@dataclass(frozen=True)
class LatencyCheck:
    """The calls' p50 and p99 with their intervals, the cap, and what the rule concluded:
    ``alarm`` holds the alarm's sentence when the cap is surely crossed, ``note`` what the report
    says otherwise (within noise, not judged)."""

    calls: int
    probes: int
    p50: Quantile
    p99: Quantile
    cap: float | None
    status: LatencyStatus
    alarm: str | None
    note: str | None
    p99_low: float | None = None  # the p99 interval's low end, stated from fewer calls too

    def to_dict(self) -> dict[str, Any]:
        def interval(q: Quantile) -> list[float] | None:
            return None if q.low is None or q.high is None else [q.low, q.high]

        return {"calls": self.calls, "probes": self.probes, "level": LEVEL,
                "p50_ms": self.p50.value, "p50_ci_ms": interval(self.p50),
                "p99_ms": self.p99.value, "p99_ci_ms": interval(self.p99),
                "p99_missing": None if self.p99.enough else self.p99.missing(),
                "p99_low_ms": self.p99_low,
                "cap_ms": self.cap, "status": self.status, "alarm": self.alarm,
                "note": self.note}


def latency_check(ms: Sequence[float] | np.ndarray, cap: float | None, *, probes: int,
                  what: str, how: str) -> LatencyCheck:
    """The per-call milliseconds ``ms`` of ``probes`` probes held to ``cap`` (None: no cap).
    ``what`` names the figure in sentences ("probe latency"), ``how`` the calls ("one live
    search each")."""
    x = np.asarray(ms, dtype=np.float64)
    p50, p99 = quantile(x, 0.5, LEVEL), quantile(x, 0.99, LEVEL)
    low = quantile_low_end(x, 0.99, LEVEL)
    calls = (f"{x.size} calls: the {probes} probes, {how}"
             + (", taken again in rounds" if x.size > probes else ""))

    def done(status: LatencyStatus, alarm: str | None = None,
             note: str | None = None) -> LatencyCheck:
        return LatencyCheck(int(x.size), probes, p50, p99, cap, status, alarm, note, low)

    if cap is None or x.size == 0:
        return done("no cap")
    point = float(np.percentile(x, 99))
    if p99.enough:
        assert p99.low is not None and p99.high is not None
        ci = f"95 % interval {p99.low:.2f}–{p99.high:.2f} ms over {calls}"
        if p99.low > cap:
            return done("over", alarm=(
                f"{what} p99 is {point:.2f} ms, over the maximum {cap:g} ms ({ci}: the "
                "whole interval is above the maximum)"))
        if point > cap:
            return done("within noise", note=(
                f"{what} p99 {point:.2f} ms is over the maximum {cap:g} ms, but its {ci} "
                "reaches below it: within noise, not an alarm"))
        return done("within")
    short = (f"{calls}, within {JUDGED_SECONDS:g} s: {p99.missing()} for the interval's high "
             "end")
    if low is not None and low > cap:
        return done("over", alarm=(
            f"{what} p99 is {point:.2f} ms, over the maximum {cap:g} ms (the low end of its "
            f"95 % interval, {low:.2f} ms, is above the maximum; {short})"))
    shown = "cannot be stated and" if low is None else f"{low:.2f} ms,"
    return done("not judged", note=(
        f"{what} p99 {point:.2f} ms: the low end of its 95 % interval, {shown} is not above the "
        f"maximum {cap:g} ms, and whether the p99 is under it cannot be said ({short}): not "
        "judged, not an alarm"))
