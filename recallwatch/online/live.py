"""Live signals over a time window of an interaction log: the production health of search.

A pure function of the impressions (no store, no clock): the monitor (issue 15, part 5) feeds it
the latest window of the log and alarms on the figures. Definitions match the A/B readout's:

- no-result rate: share of impressions that showed nothing;
- CTR (click-through rate): clicked results per impression;
- abandonment: share of impressions without a click (no-result impressions included);
- latency p50 / p95 / p99: percentiles of ``latency_ms`` over the impressions that logged it,
  the p50 and p99 with their distribution-free 95 % intervals (:func:`recallwatch.stats.quantile`:
  the p99's from 368 logged latencies on, the median's from 6), and the p99 interval's low end
  alone, which needs far fewer (:func:`recallwatch.stats.quantile_low_end`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from recallwatch._durations import LONGEST_DAYS, TOO_LONG, Unit, count_back
from recallwatch.errors import InputError, UsageError

if TYPE_CHECKING:
    from recallwatch.online.log import Impression, InteractionLog
    from recallwatch.ops.live_signals import LiveCheck, LivePolicy

_UNITS: dict[str, Unit] = {"m": "minutes", "h": "hours", "d": "days"}

__all__ = ["DEFAULT_BASELINE", "DEFAULT_WINDOW", "LiveLog", "LiveSignals", "live_signals",
           "parse_window", "window_and_baseline", "window_signals"]

#: Without ``--window``: the newest day of the log (the newer half when it spans under two days).
DEFAULT_WINDOW = timedelta(hours=24)
#: The baseline: the stretch of the log just before the window, at most this long.
DEFAULT_BASELINE = timedelta(days=7)


@dataclass(frozen=True)
class LiveSignals:
    """The signals of one window; rates are None when the window holds no impression."""

    start: datetime | None
    end: datetime | None
    impressions: int
    no_result_rate: float | None
    ctr: float | None
    abandonment: float | None
    latency_ms: dict[str, float] | None  # p50, p95, p99; None when no latency was logged
    latency_count: int
    ctr_sd: float | None = None  # standard deviation of clicked results per impression
    # the 95 % intervals of the latency p50 and p99 ([low, high], None from too few latencies)
    latency_ci_ms: dict[str, list[float] | None] | None = None
    latency_p99_low_ms: float | None = None  # the p99 interval's low end, from fewer too

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": {"start": None if self.start is None else self.start.isoformat(),
                       "end": None if self.end is None else self.end.isoformat()},
            "impressions": self.impressions, "no_result_rate": self.no_result_rate,
            "ctr": self.ctr, "abandonment": self.abandonment, "latency_ms": self.latency_ms,
            "latency_count": self.latency_count, "ctr_sd": self.ctr_sd,
            "latency_ci_ms": self.latency_ci_ms, "latency_p99_low_ms": self.latency_p99_low_ms,
        }


def live_signals(impressions: Iterable[Impression], *, start: datetime | None = None,
                 end: datetime | None = None, source: str = "<log>") -> LiveSignals:
    """Signals of the impressions with ``start <= ts < end`` (all of them when no bound is
    given). With a bound, every impression must carry ``ts``. Streams; memory is one float per
    impression with a latency."""
    import numpy as np

    for bound in (start, end):
        if bound is not None and bound.tzinfo is None:
            raise UsageError("window bounds must be timezone-aware datetimes")
    if start is not None and end is not None and not start < end:
        raise UsageError(f"the window is empty: start {start} is not before end {end}")
    windowed = start is not None or end is not None
    n = empty = clicks = abandoned = clicks_sq = 0
    latencies = array("d")
    for imp in impressions:
        if windowed:
            if imp.ts is None:
                raise InputError(source=source, line=imp.line, record=imp.query_id, field="ts",
                                 expected="a timestamp on every impression (a time window was "
                                 "asked for)", found="<nothing>")
            if (start is not None and imp.ts < start) or (end is not None and imp.ts >= end):
                continue
        n += 1
        if not imp.shown:
            empty += 1
        clicked = len(set(imp.click_positions))
        clicks += clicked
        clicks_sq += clicked * clicked
        if not clicked:
            abandoned += 1
        if imp.latency_ms is not None:
            latencies.append(imp.latency_ms)
    latency = intervals = p99_low = None
    if latencies:
        from recallwatch.stats import quantile, quantile_low_end

        values = np.frombuffer(latencies, dtype=np.float64)
        p50, p95, p99 = np.percentile(values, [50, 95, 99]).tolist()
        latency = {"p50": p50, "p95": p95, "p99": p99}
        intervals = {}
        for q in (0.5, 0.99):
            est = quantile(values, q)
            intervals[est.name] = None if est.low is None or est.high is None else [
                est.low, est.high]
        p99_low = quantile_low_end(values, 0.99)
    return LiveSignals(
        start=start, end=end, impressions=n,
        no_result_rate=empty / n if n else None, ctr=clicks / n if n else None,
        abandonment=abandoned / n if n else None, latency_ms=latency,
        latency_count=len(latencies),
        ctr_sd=math.sqrt(max(clicks_sq / n - (clicks / n) ** 2, 0.0)) if n else None,
        latency_ci_ms=intervals, latency_p99_low_ms=p99_low,
    )


def parse_window(text: str, option: str = "--window") -> timedelta:
    """``30m``, ``6h``, ``7d`` (minutes, hours, days) as a duration; ``option`` names the option
    it came from in the refusal."""
    unit = _UNITS.get(text[-1:].lower())
    try:
        amount = float(text[:-1]) if unit is not None else float("nan")
    except ValueError:
        amount = float("nan")
    longest = LONGEST_DAYS * {"minutes": 1440, "hours": 24, "days": 1}.get(unit or "days", 1)
    if unit is None or not 0 < amount <= longest:
        raise UsageError(f"{option}: a window is a positive number of minutes, hours or days, "
                         f"e.g. 30m, 24h or 7d, at most {LONGEST_DAYS:,}d; found {text!r}"
                         + (f" ({TOO_LONG})" if amount > longest else ""))
    return timedelta(**{unit: amount})


def window_signals(log: InteractionLog, window: timedelta | None = None) -> LiveSignals:
    """The signals of the last ``window`` of ``log``, ending at its newest impression (a log
    shipped in batches is judged on its own latest traffic, not on the reader's clock); the whole
    log when ``window`` is None. Reads the log twice when windowed: once for its newest
    timestamp, once for the figures."""
    source = str(log.path)
    if window is None:
        return live_signals(log, source=source)
    newest: datetime | None = None
    for imp in log:
        if imp.ts is None:
            raise InputError(source=source, line=imp.line, record=imp.query_id, field="ts",
                             expected="a timestamp on every impression (a time window was "
                             "asked for)", found="<nothing>")
        if newest is None or imp.ts > newest:
            newest = imp.ts
    if newest is None:  # an empty log: an empty window
        return live_signals((), source=source)
    end = newest + timedelta(microseconds=1)  # the window's end is exclusive
    return live_signals(log, start=count_back(end, window), end=end, source=source)


def window_and_baseline(log: InteractionLog, window: timedelta | None = None, *,
                        baseline: timedelta = DEFAULT_BASELINE
                        ) -> tuple[LiveSignals, LiveSignals | None]:
    """The signals of the judged window and of the baseline just before it (at most
    ``baseline`` long; None when the window holds the whole log). ``window`` None: the default,
    the newest 24 hours, or the newer half of the log when it spans less than 48 hours, so that
    a change half-way through a short log is not diluted; a log without timestamps is judged
    whole then. Reads the log three times."""
    source = str(log.path)
    oldest: datetime | None = None
    newest: datetime | None = None
    for imp in log:
        if imp.ts is None and window is None:
            return live_signals(log, source=source), None
        if imp.ts is None:
            raise InputError(source=source, line=imp.line, record=imp.query_id, field="ts",
                             expected="a timestamp on every impression (live signals are "
                             "judged over a time window)", found="<nothing>")
        oldest = imp.ts if oldest is None or imp.ts < oldest else oldest
        newest = imp.ts if newest is None or imp.ts > newest else newest
    if oldest is None or newest is None:
        return live_signals((), source=source), None
    end = newest + timedelta(microseconds=1)  # the window's end is exclusive
    length = window
    if length is None:
        span = end - oldest
        length = DEFAULT_WINDOW if span >= 2 * DEFAULT_WINDOW else span / 2
    start = count_back(end, length)
    judged = live_signals(log, start=start, end=end, source=source)
    if start <= oldest:
        return judged, None
    before = live_signals(log, start=max(count_back(start, baseline), oldest), end=start,
                          source=source)
    return judged, before


@dataclass(frozen=True)
class LiveLog:
    """An interaction log judged beside a monitor run: the signals of its ``window`` (ending at
    its newest impression; None: the default, see :func:`window_and_baseline`; ``"all"``: the
    whole log, no baseline) held to ``policy`` (None: the default thresholds), and compared with
    the stretch just before the window, at most ``baseline`` long."""

    path: Path
    window: timedelta | Literal["all"] | None = None
    baseline: timedelta = DEFAULT_BASELINE
    policy: LivePolicy | None = None

    def check(self) -> LiveCheck:
        """Read the log and hold its window to the policy (its alarms are the monitor's)."""
        from recallwatch.online.log import InteractionLog
        from recallwatch.ops.live_signals import check_live

        source = InteractionLog(self.path)
        if self.window == "all":
            signals, before = window_signals(source), None
        else:
            signals, before = window_and_baseline(source, self.window, baseline=self.baseline)
        return check_live({**signals.to_dict(), "log": source.summary.to_dict()}, self.policy,
                          None if before is None else before.to_dict())
