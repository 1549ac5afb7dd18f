"""The funnel page: per change, the gate's headline offline (its verdict and mean quality, and the
change against its baseline) next to the online readout attached to it, agreed or not, and the
recent changes still awaiting a readout (:mod:`recallwatch.history.funnel`)."""

from __future__ import annotations

from typing import Any

from recallwatch.errors import UsageError
from recallwatch.history import History
from recallwatch.history.funnel import awaiting_readout
from recallwatch.report.plots import Series, scatter

__all__ = ["funnel_view", "headline"]

MAX_ROWS = 500
# The offline metrics a readout is compared on (recallwatch.history.funnel.OFFLINE_METRICS), in
# words with their unit, for the scatter's axis and the detail under each headline.
METRIC_WORDS: dict[str, str] = {
    "ndcg": "nDCG@K, 0–1", "quality": "mean quality, points 0–100",
    "recall": "recall@K, 0–1", "precision": "precision@K, 0–1", "mrr": "MRR, 0–1",
}


def headline(h: History, run_id: str, baseline: str | None) -> dict[str, Any] | None:
    """The gate's headline of a change: its verdict and mean quality, and the mean quality of
    the baseline it was compared with (None when the run is no longer in the history)."""
    try:
        run = h.summary(run_id)
    except UsageError:
        return None
    out: dict[str, Any] = {"verdict": run.verdict, "quality": float(run.mean_quality),
                           "failing": run.failed_queries, "n": run.n_queries,
                           "baseline": baseline, "baseline_verdict": None,
                           "baseline_quality": None, "change": None}
    if baseline is not None:
        try:
            base = h.summary(baseline)
        except UsageError:
            return out
        out.update(baseline_verdict=base.verdict, baseline_quality=float(base.mean_quality),
                   change=float(run.mean_quality) - float(base.mean_quality))
    return out


def _axis(names: set[str], words: dict[str, str], what: str) -> str:
    shown = sorted(words.get(n, n) for n in names)
    unit = shown[0] if len(shown) == 1 else "per metric"
    return f"{what} ({unit})"


def funnel_view(h: History) -> dict[str, Any]:
    """The readouts, newest first, each with its gate's headline; the counts by agreement;
    offline delta against online delta as a scatter (one colour per agreement: the mirages sit
    right of zero, at or under zero), and the recent changes awaiting a readout (what to test
    online next)."""
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
    chart = scatter(
        "offline change vs online change, one point per change", series,
        x_label=_axis({r.offline_metric for r in rows}, METRIC_WORDS, "offline change"),
        y_label=_axis({r.online_metric for r in rows}, {}, "online change"),
    ) if series else None
    awaiting = awaiting_readout(h)
    return {"rows": rows, "counts": counts, "chart": chart, "awaiting": awaiting,
            "metric_words": METRIC_WORDS,
            "headlines": {r.id: headline(h, r.change_run, r.offline_baseline) for r in rows},
            "awaiting_headlines": [headline(h, a.run_id, a.offline.baseline) for a in awaiting]}
