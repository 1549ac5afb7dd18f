"""The funnel page: per change, the offline delta (its gate run against its baseline) and the
online readout attached to it, agreed or not, and the recent changes still awaiting a readout
(:mod:`recallwatch.history.funnel`)."""

from __future__ import annotations

from typing import Any

from recallwatch.history import History
from recallwatch.history.funnel import awaiting_readout
from recallwatch.report.plots import Series, scatter

__all__ = ["funnel_view"]

MAX_ROWS = 500


def funnel_view(h: History) -> dict[str, Any]:
    """The readouts, newest first, the counts by agreement, offline delta against online delta
    as a scatter (one colour per agreement: the mirages sit right of zero, at or under zero),
    and the recent changes awaiting a readout (what to test online next)."""
    rows = h.online_readouts(limit=MAX_ROWS)
    counts = {k: sum(r.agreement == k for r in rows) for k in ("agreed", "disagreed",
                                                                "undecided")}
    series = []
    for status, cls in (("agreed", "c2"), ("disagreed", "c3"), ("undecided", "dim")):
        pts = [r for r in rows if r.agreement == status and r.offline_delta is not None
               and r.online_delta is not None]
        if pts:
            series.append(Series(status, [float(r.offline_delta or 0.0) for r in pts],
                                 [float(r.online_delta or 0.0) for r in pts],
                                 [f"{r.change_run}: offline {r.offline_metric} "
                                  f"{r.offline_delta:+.4f}, online {r.online_metric} "
                                  f"{r.online_delta:+.4g} ({r.online_verdict})" for r in pts],
                                 line=False, cls=cls))
    chart = scatter("offline delta vs online delta, one point per change", series,
                    x_label="offline delta (gate run vs its baseline)",
                    y_label="online delta") if series else None
    return {"rows": rows, "counts": counts, "chart": chart, "awaiting": awaiting_readout(h)}
