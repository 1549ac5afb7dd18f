"""What ``eval`` and ``compare`` print in the terminal around their tables, in one style: the
runs named above the table, then the table (:func:`recallwatch._terminal.table_lines`), then a
blank line and what the figures mean, then the queries left out or scored 0, each list cut at ten
ids."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ids", "query_notes", "value"]


def value(x: float) -> str:
    """A measure's value as both commands print it: 4 decimals."""
    return f"{x:.4f}"


def ids(shown: Sequence[str], limit: int = 10) -> str:
    """Query ids, the first ``limit`` of them and how many more."""
    head = ", ".join(shown[:limit])
    return head + (f", … (+{len(shown) - limit})" if len(shown) > limit else "")


def _queries(n: int) -> str:
    return f"{n} judged quer{'y' if n == 1 else 'ies'}"


def query_notes(missing: Sequence[tuple[str, Sequence[str]]],
                not_judged: Sequence[str]) -> list[str]:
    """The notes under a table: for each (run's name, judged queries it did not return) one
    line, then the queries of the runs that nobody judged."""
    out = [f"{_queries(len(q))} missing from {name}, scored 0 there: {ids(q)}"
           for name, q in missing if q]
    if not_judged:
        n = len(not_judged)
        out.append(f"{n} unjudged quer{'y' if n == 1 else 'ies'} ignored: {ids(not_judged)}")
    return out
