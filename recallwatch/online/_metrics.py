"""The A/B metrics: what each impression adds to a unit's numerator and denominator.

Per impression (numerator / denominator):

- ``ctr``, click-through rate: clicked results / 1 (clicks per impression; each result once);
- ``abandonment``: 1 if nothing was clicked / 1 (no-result impressions included);
- ``time-to-click``: seconds from the impression to its first click / 1, impressions with a click
  only;
- ``conversion``: 1 if the impression led to a conversion / 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from recallwatch.errors import InputError

if TYPE_CHECKING:
    from recallwatch.online.log import Impression

__all__ = ["METRICS", "METRIC_NAMES", "MetricName", "contribution", "unit_key"]

MetricName = Literal["ctr", "abandonment", "time-to-click", "conversion"]


@dataclass(frozen=True)
class _MetricDef:
    higher_is_better: bool
    description: str


METRICS: dict[MetricName, _MetricDef] = {
    "ctr": _MetricDef(True, "clicked results per impression"),
    "abandonment": _MetricDef(False, "share of impressions without a click"),
    "time-to-click": _MetricDef(False, "seconds from the impression to its first click"),
    "conversion": _MetricDef(True, "share of impressions that led to a conversion"),
}
METRIC_NAMES: tuple[MetricName, ...] = get_args(MetricName)


def unit_key(imp: Impression, unit: str, source: str) -> str:
    """The unit the impression counts for: its user (``unit`` "user") or its session; a located
    error when the log does not say."""
    key = imp.user if unit == "user" else imp.session
    if key is None:
        raise InputError(source=source, line=imp.line, record=imp.query_id, field=unit,
                         expected=f"the {unit} of every impression (--unit {unit})",
                         found="<nothing>")
    return key


def contribution(name: MetricName, imp: Impression, source: str) -> float | None:
    """The impression's numerator for the metric, or None when it does not count (its
    denominator is then 0)."""
    if name == "ctr":
        return float(len(set(imp.click_positions)))
    if name == "abandonment":
        return 0.0 if imp.click_positions else 1.0
    if name == "conversion":
        if imp.conversion is None:
            raise InputError(source=source, line=imp.line, record=imp.query_id,
                             field="conversion", expected="true or false (--metric conversion)",
                             found="<nothing>")
        return 1.0 if imp.conversion else 0.0
    # time-to-click
    if not imp.click_positions:
        return None
    if imp.ts is None:
        raise InputError(source=source, line=imp.line, record=imp.query_id, field="ts",
                         expected="the impression's timestamp (--metric time-to-click)",
                         found="<nothing>")
    stamps = []
    for i, stamp in enumerate(imp.click_ts, start=1):
        if stamp is None:
            raise InputError(source=source, line=imp.line, record=imp.query_id,
                             field=f"clicks[{i}].ts",
                             expected="the click's timestamp (--metric time-to-click)",
                             found="<nothing>")
        stamps.append(stamp)
    first = min(stamps)
    seconds = (first - imp.ts).total_seconds()
    if seconds < 0:
        raise InputError(source=source, line=imp.line, record=imp.query_id, field="clicks[].ts",
                         expected="clicks at or after the impression's ts",
                         found=f"<a click {-seconds:g} s before it>")
    return seconds
