"""A latency cap judged on the p99's interval, not on its point: the one rule the gate's
``max_latency_p99_ms`` and the monitor's probe and pipeline latency alarms share.

A p99 of a few hundred calls is the slowest call or few: one call that met a busy moment, and the
cap is crossed though nothing changed. So:

* each quantile is stated with its distribution-free 95 % interval (from the order statistics of
  the calls, no shape assumed), and only from the calls it needs (368 for the p99:
  :func:`recallwatch.stats.calls_needed`);
* the cap is crossed only when the p99's **whole interval** lies above it, that is when its low
  end does: the true p99 is then over the cap but for a 2.5 % chance. A p99 over the cap whose
  interval reaches below it is reported *within noise*, and does not count as crossing;
* the low end needs far fewer calls than the whole interval
  (:func:`recallwatch.stats.quantile_low_end`), so calls too few for a p99 still show a p99
  surely over the cap; what they cannot show is a p99 *under* it, so then the check says it
  could not judge.

The cap is absolute: a machine busy with other work makes the same index slower, and a cap the
load of the moment crosses is crossed for the users too. What the rule removes is the verdict
from one slow call among too few (docs/measured-figures.md measures both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from recallwatch.stats import Quantile, quantile, quantile_low_end

__all__ = ["LEVEL", "LatencyCheck", "LatencyStatus", "latency_check"]

LEVEL = 0.95
LatencyStatus = Literal["no cap", "within", "within noise", "over", "not judged"]


@dataclass(frozen=True)
class LatencyCheck:
    """The calls' p50 and p99 with their intervals, the cap, and what the rule concluded:
    ``alarm`` holds the sentence saying the cap is surely crossed, ``note`` what the report says
    otherwise (within noise, not judged). ``probes``: how many queries the calls were spread
    over."""

    calls: int
    probes: int
    p50: Quantile
    p99: Quantile
    cap: float | None
    status: LatencyStatus
    alarm: str | None
    note: str | None
    p99_low: float | None = None  # the p99 interval's low end, stated from fewer calls too
    point: float | None = None  # the p99 read from the calls as they are (numpy's percentile)

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
                  what: str, calls: str, limit: str, consequence: str = "an alarm"
                  ) -> LatencyCheck:
    """The per-call milliseconds ``ms``, spread over ``probes`` queries, held to ``cap`` (None:
    no cap). ``what`` names the figure in sentences ("probe latency"), ``calls`` the calls ("the
    40 probes, one live search each"), ``limit`` what bounded their number ("within 10 s"),
    ``consequence`` what a crossed cap would be ("an alarm", "a stop")."""
    x = np.asarray(ms, dtype=np.float64)
    p50, p99 = quantile(x, 0.5, LEVEL), quantile(x, 0.99, LEVEL)
    low = quantile_low_end(x, 0.99, LEVEL)
    point = float(np.percentile(x, 99)) if x.size else None
    told = f"{x.size} calls: {calls}"

    def done(status: LatencyStatus, alarm: str | None = None,
             note: str | None = None) -> LatencyCheck:
        return LatencyCheck(int(x.size), probes, p50, p99, cap, status, alarm, note, low, point)

    if cap is None or point is None:
        return done("no cap")
    if p99.enough:
        assert p99.low is not None and p99.high is not None
        ci = f"95 % interval {p99.low:.2f}–{p99.high:.2f} ms over {told}"
        if p99.low > cap:
            return done("over", alarm=(
                f"{what} p99 is {point:.2f} ms, over the maximum {cap:g} ms ({ci}: the "
                "whole interval is above the maximum)"))
        if point > cap:
            return done("within noise", note=(
                f"{what} p99 {point:.2f} ms is over the maximum {cap:g} ms, but its {ci} "
                f"reaches below it: within noise, not {consequence}"))
        return done("within")
    short = f"{told}, {limit}: {p99.missing()} for the interval's high end"
    if low is not None and low > cap:
        return done("over", alarm=(
            f"{what} p99 is {point:.2f} ms, over the maximum {cap:g} ms (the low end of its "
            f"95 % interval, {low:.2f} ms, is above the maximum; {short})"))
    shown = "cannot be stated and" if low is None else f"{low:.2f} ms,"
    return done("not judged", note=(
        f"{what} p99 {point:.2f} ms: the low end of its 95 % interval, {shown} is not above the "
        f"maximum {cap:g} ms, and whether the p99 is under it cannot be said ({short}): not "
        f"judged, not {consequence}"))
