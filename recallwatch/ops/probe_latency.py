"""The probes' latency against its cap, with its spread: what the monitor alarms on for the store's
live search and for a pipeline.

A p99 of the probe set's own calls is the slowest call or two of a few dozen: one call that met a
busy moment, and the cap is crossed though nothing changed. So, with a cap, the probes are
searched again in rounds (probe after probe, one call each) until the calls reach what a p99 needs
(368, :func:`recallwatch.stats.calls_needed`) or the rounds have taken 10 s, whichever comes
first; and the calls are held to the cap by the rule the gate's ``max_latency_p99_ms`` uses
(:mod:`recallwatch.acceptance.latency_cap`): an alarm only when the p99's whole 95 % interval
lies above the cap, *within noise* when the p99 is over it but its interval reaches below.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from recallwatch.acceptance.latency_cap import LEVEL, LatencyCheck, LatencyStatus, latency_check
from recallwatch.acceptance.retrieve import JUDGED_CALLS, JUDGED_SECONDS

__all__ = ["LEVEL", "LatencyCheck", "LatencyStatus", "latency_figures", "probe_latency_check",
           "timed_rounds"]

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


def probe_latency_check(ms: Sequence[float] | np.ndarray, cap: float | None, *, probes: int,
                        what: str, how: str) -> LatencyCheck:
    """The probes' per-call milliseconds ``ms`` held to ``cap`` (None: no cap) by the shared rule
    (:func:`recallwatch.acceptance.latency_cap.latency_check`). ``what`` names the figure in
    sentences ("probe latency"), ``how`` the calls ("one live search each")."""
    calls = (f"the {probes} probes, {how}"
             + (", taken again in rounds" if len(ms) > probes else ""))
    return latency_check(ms, cap, probes=probes, what=what, calls=calls,
                         limit=f"within {JUDGED_SECONDS:g} s")
