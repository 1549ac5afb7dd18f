"""Spans of time a user gives (a window, a retention, a rate limit), and dates counted back by
them, without an overflow on any value.

Python holds a span as a ``timedelta`` (at most 999,999,999 days) and a date from the year 1 to
9999, so ``timedelta(days=1e300)`` and ``now - timedelta(days=999_999)`` both fail. Here every
span a user gives is checked against one limit, :data:`LONGEST_DAYS` (999,999 days, about 2,700
years: from any date recallwatch meets it reaches back past the year 1, where dates begin), and
:func:`count_back` stops at the earliest date instead of failing: a window longer than all
recorded time holds everything.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Literal

from recallwatch.errors import InputError

__all__ = ["LONGEST_DAYS", "TOO_LONG", "Unit", "count_back", "span"]

#: The longest span a user may give, in days.
LONGEST_DAYS = 999_999
#: Why: said with every refusal of a longer span.
TOO_LONG = (f"{LONGEST_DAYS:,} days, about 2,700 years, already reach back past the year 1, "
            "where dates begin")

Unit = Literal["minutes", "hours", "days"]
_PER_DAY: dict[Unit, int] = {"minutes": 24 * 60, "hours": 24, "days": 1}


def span(amount: float, unit: Unit, option: str, *, zero: bool = True,
         whole: bool = False) -> timedelta:
    """``amount`` ``unit`` as a span of time, or an InputError naming ``option`` for a value
    that is negative (or 0 when ``zero`` is False), not a number, not whole (``whole``), or
    longer than :data:`LONGEST_DAYS`."""
    limit = LONGEST_DAYS * _PER_DAY[unit]
    kind = "a whole number" if whole else "a number"
    number = float(amount)
    if (not math.isfinite(number) or number < 0 or (number == 0 and not zero)
            or (whole and not number.is_integer()) or number > limit):
        expected = (f"{kind} of {unit} from 0 to {limit:,}" if zero
                    else f"{kind} of {unit} above 0, at most {limit:,}")
        raise InputError(field=option, expected=expected, found=amount,
                         hint=TOO_LONG if number > limit else None)
    return timedelta(**{unit: number})


def count_back(moment: datetime, length: timedelta) -> datetime:
    """``moment - length``, or the earliest date (the year 1, in ``moment``'s time zone) when
    that falls before it."""
    earliest = datetime.min.replace(tzinfo=moment.tzinfo)
    if length >= moment.replace(tzinfo=None) - datetime.min:
        return earliest
    return moment - length
