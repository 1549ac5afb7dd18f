"""Attach an A/B readout to the change it tested: the online half of the offline-to-online funnel
(:mod:`recallwatch.history.funnel` explains the funnel and keeps the offline half).

    from recallwatch.online.funnel import attach_readout
    row = attach_readout(history, "latest", result)          # result: an ABReadout
    row.agreement, row.payload["reading"]
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recallwatch.errors import UsageError
from recallwatch.history import OnlineReadoutRow
from recallwatch.history.funnel import agreement, offline_delta, resolve_change

if TYPE_CHECKING:
    from recallwatch.history import History
    from recallwatch.online.ab import ABReadout

__all__ = ["attach_readout"]


def attach_readout(history: History, change: str, result: ABReadout, *,
                   metric: str | None = None, offline_metric: str = "ndcg",
                   log: dict[str, Any] | None = None) -> OnlineReadoutRow:
    """Record ``result`` (control = before the change, treatment = after) against ``change`` (a
    run reference or ``promote:ID``) with the change's offline delta, and return the stored row.
    ``metric``: the A/B metric compared (default: the readout's first). A blocked readout (sample
    ratio mismatch, too few units) says nothing about the change and is refused."""
    if result.blocked:
        raise UsageError("the A/B readout is blocked (" + "; ".join(result.reasons) + "): it "
                         "says nothing about the change, so it is not attached")
    name = metric or next(iter(result.metrics))
    m = result.metrics.get(name)
    if m is None:
        raise UsageError(f"the readout has no metric {name!r} (it has "
                         f"{', '.join(result.metrics)})")
    run_id, promote_id = resolve_change(history, change)
    off = offline_delta(history, run_id, offline_metric)
    status, reading = agreement(off.delta, m.verdict)
    row: dict[str, Any] = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"), "change_run": run_id,
        "promote_id": promote_id, "offline_metric": offline_metric,
        "offline_baseline": off.baseline, "offline_delta": off.delta, "online_metric": name,
        "online_delta": m.delta, "online_ci_low": m.ci[0], "online_ci_high": m.ci[1],
        "online_verdict": m.verdict, "agreement": status,
        "payload": {"reading": reading, "offline": off.to_dict(), "readout": result.to_dict(),
                    "log": log},
    }
    row["payload"] = json.loads(json.dumps(row["payload"], default=str))  # as stored
    return OnlineReadoutRow(id=history.record_online_readout(row), **row)
