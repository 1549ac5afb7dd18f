"""Error budget over monitor runs (SRE style, applied to recall).

* **objective**: a monitor run is *good* when its recall@k against exact search is ≥ ``target``
  and, when it also read live traffic (``monitor --log``), no live signal crossed its alarm
  threshold (:mod:`recallwatch.ops.live_signals`);
* **SLO**: at least ``slo`` of the runs in a window are good (the window is the last
  ``window_runs`` runs, or the runs of the last ``window_days`` days);
* **budget**: the runs allowed to be bad in a full window, ``(1 − slo) × window_runs``
  (for a window in days, the runs seen so far stand in for the window size);
* **consumed**: bad runs ÷ budget (1.0 = spent; above 1 = overspent);
* **burn rate**: the observed bad-run rate ÷ the allowed rate ``(1 − slo)``; 1.0 spends the budget
  exactly by the end of the window, 2.0 twice as fast.

The budget is *spent* (the monitor alarms) when consumed ≥ 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from recallwatch._durations import count_back, span
from recallwatch.errors import InputError

__all__ = ["BudgetPolicy", "BudgetStatus", "error_budget"]


@dataclass(frozen=True)
class BudgetPolicy:
    target: float = 0.95
    slo: float = 0.90
    window_runs: int | None = 30
    window_days: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.target <= 1.0:
            raise InputError(field="budget target", expected="a recall in [0, 1]",
                             found=self.target)
        if not 0.0 <= self.slo < 1.0:
            raise InputError(field="budget slo", expected="a share in [0, 1)", found=self.slo)
        if (self.window_runs is None) == (self.window_days is None):
            raise InputError(field="budget window", expected="a window in runs or in days "
                             "(exactly one)", found=(self.window_runs, self.window_days))
        if self.window_runs is not None and self.window_runs < 1:
            raise InputError(field="budget window runs", expected="at least 1",
                             found=self.window_runs)
        if self.window_days is not None:
            span(self.window_days, "days", "--budget-days", zero=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BudgetStatus:
    policy: BudgetPolicy
    runs: int  # runs in the window
    bad: int
    allowed_bad: float
    consumed: float  # bad / allowed (0 when nothing is allowed and nothing is bad)
    burn_rate: float
    spent: bool
    live_bad: int = 0  # bad runs whose recall met the target: live traffic crossed a threshold

    @property
    def remaining(self) -> float:
        return max(0.0, 1.0 - self.consumed)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["remaining"] = self.remaining
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BudgetStatus:
        """The status as :meth:`to_dict` recorded it (in a monitor run's history record);
        KeyError, TypeError or InputError when ``d`` is not one."""
        p = d["policy"]
        policy = BudgetPolicy(float(p["target"]), float(p["slo"]), p["window_runs"],
                              p["window_days"])
        return cls(policy, int(d["runs"]), int(d["bad"]), float(d["allowed_bad"]),
                   float(d["consumed"]), float(d["burn_rate"]), bool(d["spent"]),
                   int(d.get("live_bad", 0)))

    def summary(self) -> str:
        window = (f"{self.policy.window_runs} runs" if self.policy.window_runs is not None
                  else f"{self.policy.window_days:g} days")
        return (f"error budget (recall ≥ {self.policy.target:g} in {self.policy.slo:.0%} of "
                f"{window}): {self.bad}/{self.runs} runs bad, {self.consumed:.0%} consumed, "
                f"burn rate {self.burn_rate:.2f}" + self._live() + (" — SPENT" if self.spent
                                                                     else ""))

    def _live(self) -> str:
        return (f" ({self.live_bad} for live traffic past a threshold)" if self.live_bad
                else "")

    def explain_consumed(self) -> str:
        """Budget consumed, in one sentence a reader needs no book for."""
        window = (f"the last {self.policy.window_runs} runs" if self.policy.window_runs is not None
                  else f"the {self.runs} runs of the last {self.policy.window_days:g} days")
        return (f"The share of the tolerated shortfall used up: up to {self._allowed()} of "
                f"{window} ({self.allowed_bad:g} run{_s(self.allowed_bad)}) may have a recall "
                f"against exact search under {self.policy.target:g}"
                f"{' or live traffic past an alarm threshold' if self.live_bad else ''}, and "
                f"{self.bad} {'has' if self.bad == 1 else 'have'}{self._live()}; at 100% the "
                "budget is spent and the monitor alarms.")

    def explain_burn_rate(self) -> str:
        """Burn rate, in one sentence a reader needs no book for."""
        if not self.runs:
            return "How fast the budget is being used: no monitor run in the window yet."
        return (f"How fast the budget is being used compared with the allowed pace: {self.bad} "
                f"bad run{_s(self.bad)} in {self.runs} is {self.burn_rate:.2f} times the "
                f"{self._allowed()} allowed; at 1 the budget lasts exactly the window, above 1 it "
                "runs out early.")

    def _allowed(self) -> str:
        return f"{(1.0 - self.policy.slo) * 100:.3g}%"  # 10%, 0.1%: never rounded to 0%


def _s(n: float) -> str:
    return "" if n == 1 else "s"


def error_budget(
    recalls: Sequence[tuple[datetime, float] | tuple[datetime, float, bool]],
    policy: BudgetPolicy, *, now: datetime | None = None,
) -> BudgetStatus:
    """The budget over ``(time, recall)`` monitor results, in any order; a third item ``True``
    marks a run whose live traffic crossed an alarm threshold (bad whatever its recall)."""
    runs = sorted(((r[0], r[1], len(r) > 2 and bool(r[2])) for r in recalls),
                  key=lambda r: r[0])
    if policy.window_days is not None:
        start = count_back(now or (runs[-1][0] if runs else datetime.now()),
                           timedelta(days=policy.window_days))
        runs = [r for r in runs if r[0] >= start]
    else:
        runs = runs[-(policy.window_runs or 1):]
    n = len(runs)
    bad = sum(1 for _, recall, live in runs if recall < policy.target or live)
    live_bad = sum(1 for _, recall, live in runs if recall >= policy.target and live)
    size = policy.window_runs if policy.window_runs is not None else n
    allowed = (1.0 - policy.slo) * size
    # allowed is 0 only for an empty day window, which has no bad run either
    consumed = bad / allowed if allowed > 0 else 0.0
    allowed_rate = 1.0 - policy.slo
    rate = bad / n if n else 0.0
    burn = rate / allowed_rate  # slo < 1, so the allowed rate is positive
    return BudgetStatus(policy, n, bad, allowed, consumed, burn, consumed >= 1.0, live_bad)
