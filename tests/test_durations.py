"""Spans of time a user gives (recallwatch._durations): one limit, said with its reason, and
dates counted back that stop at the year 1 instead of overflowing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from recallwatch._durations import LONGEST_DAYS, TOO_LONG, count_back, span
from recallwatch.errors import InputError


def test_spans_within_the_limit() -> None:
    assert span(3, "days", "--keep-days", whole=True) == timedelta(days=3)
    assert span(1.5, "hours", "--x") == timedelta(minutes=90)
    assert span(0, "hours", "--x") == timedelta(0)
    assert span(LONGEST_DAYS * 24, "hours", "--x") == timedelta(days=LONGEST_DAYS)


@pytest.mark.parametrize(("amount", "unit", "zero", "whole", "expected", "why"), [
    (999_999_999, "days", True, True, "a whole number of days from 0 to 999,999", True),
    (1e300, "hours", True, False, "a number of hours from 0 to 23,999,976", True),
    (float("inf"), "minutes", True, False, "a number of minutes from 0 to 1,439,998,560", True),
    (float("nan"), "days", True, False, "a number of days from 0 to 999,999", False),
    (-1, "days", True, False, "a number of days from 0 to 999,999", False),
    (0, "days", False, False, "a number of days above 0, at most 999,999", False),
    (2.5, "days", True, True, "a whole number of days from 0 to 999,999", False),
])
def test_spans_out_of_reach_name_the_option_and_the_limit(
        amount: float, unit: str, zero: bool, whole: bool, expected: str, why: bool) -> None:
    with pytest.raises(InputError) as refused:
        span(amount, unit, "--opt", zero=zero, whole=whole)  # type: ignore[arg-type]
    assert str(refused.value) == (f"field '--opt': expected {expected}, found {amount!r}"
                                  + (f" ({TOO_LONG})" if why else ""))


def test_counting_back_stops_at_the_year_1() -> None:
    now = datetime(2026, 12, 6, 12, tzinfo=UTC)
    assert count_back(now, timedelta(days=2)) == datetime(2026, 12, 4, 12, tzinfo=UTC)
    assert count_back(now, timedelta(days=LONGEST_DAYS)) == datetime.min.replace(tzinfo=UTC)
    early = datetime(1, 1, 1, 6, tzinfo=timezone(timedelta(hours=1)))
    assert count_back(early, timedelta(hours=7)) == datetime.min.replace(tzinfo=early.tzinfo)
    assert count_back(early, timedelta(hours=6)) == datetime.min.replace(tzinfo=early.tzinfo)
    naive = datetime(2000, 1, 1)
    assert count_back(naive, timedelta.max) == datetime.min
