"""The run list: one page of the runs, newest first, with where it sits among all of them, and the
run each store serves in production (the accepted run of its latest promotion)."""

from __future__ import annotations

from typing import Any

from recallwatch.history import History

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "page_numbers", "production_runs", "runs_view"]

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 500


def page_numbers(page: str | None, size: str | None) -> tuple[int, int]:
    """``(page, page size)`` from the query string: page from 1, size from 1 to
    :data:`MAX_PAGE_SIZE` (larger is capped; anything unreadable is the default)."""
    def number(text: str | None, default: int) -> int:
        try:
            return int(text) if text is not None else default
        except ValueError:
            return default

    return max(1, number(page, 1)), max(1, min(MAX_PAGE_SIZE, number(size, DEFAULT_PAGE_SIZE)))


def production_runs(h: History) -> dict[str, dict[str, Any]]:
    """The run in production on each store: the ACCEPT run that allowed the store's latest
    promotion (``recallwatch ops promote`` records each one as a ``promote`` monitor record).
    A rollback recorded on the store after that promotion is said, since the promoted version
    may no longer be the one serving. Keyed by run id."""
    out: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    rollbacks = h.monitor_runs(kind="rollback")
    for m in h.monitor_runs(kind="promote"):  # newest first
        run = m.payload.get("accepted_run")
        store = m.store_uri or str(m.payload.get("store", ""))
        if not m.payload.get("promoted") or not isinstance(run, str) or store in seen:
            continue
        seen.add(store)
        later = [r for r in rollbacks if r.id > m.id and r.store_uri == store]
        out.setdefault(run, {"store": store, "version": m.index_version, "at": m.created_at,
                             "promote_id": m.id,
                             "rolled_back_at": later[0].created_at if later else None})
    return out


def runs_view(h: History, dataset: str | None, page: int, size: int) -> dict[str, Any]:
    """One page of runs (``size`` a page, ``page`` from 1; a page past the end shows the last),
    the total, the first and last position shown, the production marks, and whether a run of
    the page judged answers (the answer measures' columns are shown then)."""
    total = h.count_runs(dataset=dataset)
    last_page = max(1, -(-total // size))
    page = min(page, last_page)
    rows = h.runs(dataset=dataset, limit=size, offset=(page - 1) * size)
    first = (page - 1) * size + 1 if rows else 0
    return {"rows": rows, "total": total, "page": page, "pages": last_page, "size": size,
            "first": first, "last": first + len(rows) - 1 if rows else 0,
            "production": production_runs(h), "datasets": h.dataset_names(),
            "answers": any(r.has_answers for r in rows)}
