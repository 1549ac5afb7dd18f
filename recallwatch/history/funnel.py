"""The offline-to-online funnel: did the changes the gate accepted offline hold up with users?

Offline evaluation screens many changes cheaply on a golden set; online evaluation (an A/B test on
real traffic) confirms the few that ship. The funnel keeps, per change, both answers side by
side:

* the **offline delta**: the change's gate run against its baseline (the last accepted run of the
  same golden set and policy, else the previous run of the dataset), on one metric (nDCG by
  default);
* the **online delta**: the A/B readout that arrived later (control = before the change,
  treatment = after), its interval and verdict on one metric;
* whether they **agreed**. When they disagree, trust the online result: an offline gain that
  users do not see is usually a quirk of the test set (a "test-set mirage": the golden set
  rewards something real queries do not need).

A change is a gate run (a run reference: id, prefix, ``latest``, ``accepted``) or a promotion
(``promote:ID``, the promote record's id; its offline side is the accepted run that allowed it).
Attaching a readout lives in :func:`recallwatch.online.funnel.attach_readout` (it needs the A/B
code); this module holds what only needs the history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.history._store import History

__all__ = ["OFFLINE_METRICS", "Awaiting", "OfflineDelta", "agreement", "awaiting_readout",
           "offline_delta", "resolve_change"]

# Offline metric name -> the run summary's column (every one: higher is better).
OFFLINE_METRICS: dict[str, str] = {
    "ndcg": "mean_ndcg", "quality": "mean_quality", "recall": "mean_recall",
    "precision": "mean_precision", "mrr": "mrr",
}
AWAITING_RUNS = 20  # the newest gate runs looked at for changes awaiting a readout
# An A/B metric verdict, as a direction (None: no direction can be read from it).
_ONLINE_DIRECTION: dict[str, int] = {"better": 1, "worse": -1, "no difference": 0}


@dataclass(frozen=True)
class OfflineDelta:
    run_id: str
    baseline: str | None  # None: the run has no baseline, so no delta
    metric: str
    value: float
    baseline_value: float | None

    @property
    def delta(self) -> float | None:
        return None if self.baseline_value is None else self.value - self.baseline_value

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "baseline": self.baseline, "metric": self.metric,
                "value": self.value, "baseline_value": self.baseline_value, "delta": self.delta}


def resolve_change(h: History, ref: str) -> tuple[str, int | None]:
    """``(gate run id, promote record id or None)`` of a change reference."""
    if ref.startswith("promote:"):
        try:
            wanted = int(ref.removeprefix("promote:"))
        except ValueError:
            raise UsageError(f"a promotion is named promote:ID (a number), found {ref!r}") from None
        for m in h.monitor_runs(kind="promote"):
            if m.id == wanted:
                run = m.payload.get("accepted_run")
                if not m.payload.get("promoted") or not isinstance(run, str):
                    raise UsageError(f"promote record {wanted} did not promote anything "
                                     f"({m.status}): there is no change to read out")
                return h.resolve(run), wanted
        raise UsageError(f"no promote record {wanted} in {h.location} (the dashboard's monitor "
                         "page lists them)")
    return h.resolve(ref), None


def offline_delta(h: History, run_id: str, metric: str = "ndcg") -> OfflineDelta:
    """The run's ``metric`` against the baseline its gate compared it with."""
    column = OFFLINE_METRICS.get(metric)
    if column is None:
        raise UsageError(f"unknown offline metric {metric!r}; valid: "
                         f"{', '.join(OFFLINE_METRICS)}")
    run = h.summary(run_id)
    comparison = h.load(run_id).comparison or {}
    base_id = None
    for key in ("last_accepted", "previous"):
        found = (comparison.get(key) or {}).get("run_id")
        if isinstance(found, str):
            base_id = found
            break
    if base_id is None:
        return OfflineDelta(run_id, None, metric, float(getattr(run, column)), None)
    base = h.summary(base_id)
    return OfflineDelta(run_id, base_id, metric, float(getattr(run, column)),
                        float(getattr(base, column)))


@dataclass(frozen=True)
class Awaiting:
    """A recent change with an offline delta and no online readout yet: what to test next."""

    created_at: str
    change: str  # the reference `online ab --change` takes: a run id or promote:ID
    run_id: str
    promote_id: int | None
    offline: OfflineDelta

    def to_dict(self) -> dict[str, Any]:
        return {"created_at": self.created_at, "change": self.change, "run_id": self.run_id,
                "promote_id": self.promote_id, "offline": self.offline.to_dict()}


def awaiting_readout(h: History, *, runs: int = AWAITING_RUNS,
                     metric: str = "ndcg") -> list[Awaiting]:
    """Recent changes still waiting for an online readout, newest first: promotions, and
    accepted gate runs with a baseline (so an offline delta) among the newest ``runs``. A stopped
    run does not ship, so there is nothing to test online; a run a promotion shipped is listed
    once, as the promotion. A readout attached to the run or to its promotion answers both."""
    read = {r.change_run for r in h.online_readouts()}
    out: list[Awaiting] = []
    promoted: set[str] = set()
    for m in h.monitor_runs(kind="promote", limit=runs):
        run = m.payload.get("accepted_run")
        if not m.payload.get("promoted") or not isinstance(run, str) or run in promoted:
            continue
        promoted.add(run)
        if run in read:
            continue
        try:
            off = offline_delta(h, run, metric)
        except UsageError:  # the run was pruned from the history
            continue
        out.append(Awaiting(m.created_at, f"promote:{m.id}", run, m.id, off))
    for summary in h.runs(limit=runs):
        if summary.verdict != "ACCEPT" or summary.run_id in read | promoted:
            continue
        off = offline_delta(h, summary.run_id, metric)
        if off.delta is not None:
            out.append(Awaiting(summary.created_at, summary.run_id, summary.run_id, None, off))
    return sorted(out, key=lambda a: a.created_at, reverse=True)


def agreement(delta: float | None, online_verdict: str) -> tuple[str, str]:
    """``(agreed | disagreed | undecided, what it means)`` for an offline delta (higher is
    better) and an A/B metric verdict (``better``, ``worse``, ``no difference``,
    ``inconclusive``)."""
    online = _ONLINE_DIRECTION.get(online_verdict)
    if delta is None:
        return "undecided", "no offline baseline: the change's run was the first of its golden set"
    if online is None:
        return "undecided", ("the online readout is inconclusive: it needs more traffic before "
                             "it can confirm or refute the offline result")
    offline = (delta > 0) - (delta < 0)
    if offline == online:
        return "agreed", {1: "offline gain confirmed online", -1: "offline loss confirmed online",
                          0: "no change offline, none online"}[offline]
    if offline > 0:
        return "disagreed", ("offline gain not seen online: a test-set mirage (trust the online "
                             "result; check what the golden set rewards that users do not need)")
    if online > 0:
        return "disagreed", "online gain the offline metrics missed (the golden set lacks it)"
    if offline < 0:
        return "disagreed", "offline loss users did not notice"
    return "disagreed", "online loss the offline metrics missed (the golden set lacks it)"
