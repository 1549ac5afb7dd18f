"""Checking the values of records read by :mod:`recallwatch.formats.structured`: unknown keys
with a suggestion, ids as text, numbers within a range, and values shown as an error shows them,
each error located at the record's line.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recallwatch.errors import InputError
from recallwatch.formats.structured import LINE_KEY

__all__ = ["TREC_ID_WHY", "bounded", "check_keys", "check_trec_id", "iso_date", "line_of",
           "number_text", "shown", "text_id"]

#: Why a label bound for a TREC file cannot have an id with whitespace in it.
TREC_ID_WHY = "the labels go to a TREC qrels file, whose fields are separated by whitespace"


def check_trec_id(value: str, field: str, *, source: str | os.PathLike[str],
                  line: int | None = None, record: str | None = None,
                  expected: str = "an id without whitespace", found: object = None) -> None:
    """Raise InputError, located, when ``value`` holds whitespace: it cannot be a TREC file's
    id. ``found`` is what the message shows (default: the value)."""
    if any(c.isspace() for c in value):
        raise InputError(source=source, line=line, record=record, field=field,
                         expected=expected, found=value if found is None else found,
                         hint=TREC_ID_WHY)


def iso_date(value: Any, name: str, where: dict[str, Any]) -> dt.date | None:
    """A date field (``YYYY-MM-DD``, or the date YAML already read), None when absent; anything
    else is an InputError located by ``where`` (source, line, record)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise InputError(field=name, expected="an ISO date YYYY-MM-DD", found=value, **where)


def line_of(obj: object) -> int | None:
    line = obj.get(LINE_KEY) if isinstance(obj, dict) else None
    return line if isinstance(line, int) else None


def check_keys(
    obj: dict[str, Any], valid: set[str], *, source: Path | str, record: str | None = None,
    error: Callable[..., InputError] = InputError,
) -> None:
    """Reject unknown keys, suggesting the nearest valid one."""
    from recallwatch._registry import suggest

    for key in obj:
        if key == LINE_KEY or key in valid:
            continue
        raise error(
            f"unknown key{suggest(str(key), sorted(valid))}",
            source=source, line=line_of(obj), record=record, field=str(key),
            hint=f"valid keys: {', '.join(sorted(valid))}",
        )


def text_id(value: Any) -> str | None:
    """An id as text: a non-empty string, an integer or a date (YAML reads ``id: 7`` and
    ``version: 2025-01-31`` as those); None for anything else (a list, a mapping, a boolean, a
    blank string, or a float: YAML reads ``1.10`` as 1.1, so it could not be kept as written)."""
    if type(value) is str:  # the common case first: results files hold millions of ids
        return value if value.strip() else None
    if isinstance(value, bool) or not isinstance(value, (str, int, dt.date)):
        return None
    text = str(value)
    return text if text.strip() else None


def shown(value: Any) -> Any:
    """A value as an error message shows it: ``<nothing>`` for a missing one, a mapping without
    its line marker."""
    if value is None:
        return "<nothing>"
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != LINE_KEY}
    return value


def number_text(value: float) -> str:
    """1000000 rather than 1e+06 for a whole number; ``g`` format otherwise."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def bounded(
    value: Any, lo: float, hi: float, *, source: str | Path | None, field: str,
    line: int | None = None, record: str | None = None, integer: bool = True,
) -> Any:
    """``value`` if it is a number (an integer when ``integer``) in [lo, hi], else a located
    InputError naming the range. NaN and infinities are never in range."""
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not lo <= value <= hi:
        kind = "an integer" if integer else "a number"
        raise InputError(source=source, line=line, record=record, field=field,
                         expected=f"{kind} in [{number_text(lo)}, {number_text(hi)}]",
                         found=shown(value))
    return value
