"""Error-budget arithmetic on known numbers."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from recallwatch.errors import InputError
from recallwatch.ops.budget import BudgetPolicy, BudgetStatus, error_budget

T0 = datetime(2026, 1, 1)


def runs(recalls: list[float], step: timedelta = timedelta(hours=1)
         ) -> list[tuple[datetime, float]]:
    return [(T0 + i * step, r) for i, r in enumerate(recalls)]


def test_one_bad_run_in_ten_burns_at_exactly_the_allowed_rate() -> None:
    # SLO 90 % over 20 runs: 2 bad runs allowed. 1 bad in 10 → half spent, burn rate 1.
    status = error_budget(runs([0.97] * 9 + [0.90]), BudgetPolicy(0.95, 0.90, 20))
    assert (status.runs, status.bad) == (10, 1)
    assert status.allowed_bad == pytest.approx(2.0)
    assert status.consumed == pytest.approx(0.5)
    assert status.remaining == pytest.approx(0.5)
    assert status.burn_rate == pytest.approx(1.0)
    assert not status.spent


def test_three_bad_runs_overspend_the_budget() -> None:
    status = error_budget(runs([0.9, 0.99, 0.9, 0.99, 0.9] + [0.99] * 5),
                          BudgetPolicy(0.95, 0.90, 20))
    assert status.bad == 3
    assert status.consumed == pytest.approx(1.5)
    assert status.burn_rate == pytest.approx(3.0)
    assert status.spent and status.remaining == 0.0
    assert "3/10 runs bad, 150% consumed, burn rate 3.00 — SPENT" in status.summary()


def test_exactly_the_budget_is_spent_and_the_target_is_inclusive() -> None:
    status = error_budget(runs([0.5, 0.5] + [0.95] * 18), BudgetPolicy(0.95, 0.90, 20))
    assert status.bad == 2 and status.consumed == pytest.approx(1.0) and status.spent


def test_only_the_last_window_runs_count_in_any_input_order() -> None:
    data = runs([0.1] * 5 + [0.99] * 20)
    status = error_budget(list(reversed(data)), BudgetPolicy(0.95, 0.90, 20))
    assert (status.runs, status.bad, status.consumed) == (20, 0, 0.0)


def test_a_window_in_days_uses_the_runs_seen_as_its_size() -> None:
    data = runs([0.1, 0.1, 0.99, 0.99, 0.5, 0.99], step=timedelta(days=1))  # days 0..5
    status = error_budget(data, BudgetPolicy(0.95, 0.80, None, 3.0), now=T0 + timedelta(days=5))
    # days 2..5 are in the window: 4 runs, 1 bad; allowed 0.2 × 4 = 0.8 runs
    assert (status.runs, status.bad) == (4, 1)
    assert status.consumed == pytest.approx(1 / 0.8)
    assert status.burn_rate == pytest.approx((1 / 4) / 0.2)
    assert status.spent


def test_no_runs_spend_nothing() -> None:
    status = error_budget([], BudgetPolicy(0.95, 0.9, None, 7.0), now=T0)
    assert (status.runs, status.consumed, status.burn_rate, status.spent) == (0, 0.0, 0.0, False)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"target": 1.5}, "budget target"),
    ({"slo": 1.0}, "budget slo"),
    ({"window_runs": 0}, "at least 1"),
    ({"window_runs": None}, "exactly one"),
    ({"window_runs": 10, "window_days": 2.0}, "exactly one"),
    ({"window_runs": None, "window_days": -1.0},
     "field '--budget-days': expected a number of days above 0, at most 999,999, found -1.0$"),
    ({"window_runs": None, "window_days": 1e300}, r"found 1e\+300 \(999,999 days, about 2,700 "),
])
def test_bad_policies_are_input_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        BudgetPolicy(**kwargs)  # type: ignore[arg-type]


def test_a_recorded_status_reads_back_and_explains_itself() -> None:
    status = error_budget(runs([0.1, 0.1, 0.99, 0.99, 0.5, 0.99], step=timedelta(days=1)),
                          BudgetPolicy(0.95, 0.80, None, 3.0), now=T0 + timedelta(days=5))
    assert BudgetStatus.from_dict(status.to_dict()) == status
    assert status.explain_consumed() == (
        "The share of the tolerated shortfall used up: up to 20% of the 4 runs of the last 3 days "
        "(0.8 runs) may have a recall against exact search under 0.95, and 1 has; at 100% the "
        "budget is spent and the monitor alarms.")
    assert "1 bad run in 4 is 1.25 times the 20% allowed" in status.explain_burn_rate()
    empty = error_budget([], BudgetPolicy(0.95, 0.999, None, 7.0), now=T0)
    assert empty.explain_burn_rate().endswith("no monitor run in the window yet.")
    assert "up to 0.1% of the 0 runs" in empty.explain_consumed()  # never rounded to 0%
    with pytest.raises(KeyError):
        BudgetStatus.from_dict({"remaining": 0.5})


def test_a_day_window_longer_than_all_recorded_time_holds_every_run() -> None:
    runs = [(T0 - timedelta(days=d), 0.5) for d in (1, 400, 700_000)]
    status = error_budget(runs, BudgetPolicy(0.95, 0.9, None, 999_999.0), now=T0)
    assert status.runs == 3 and status.bad == 3
