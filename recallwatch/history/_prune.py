"""Prune a run history: keep the last N runs or the last N days, and always every run that
something still points at.

Always kept, whatever the window:

* **baselines**: for every golden set and policy (their content hashes), its latest ACCEPT (the
  run the next gate is judged against); for every dataset name, its latest run (the "previous"
  run of the next gate);
* **production runs**: the gate run that allowed each promotion recorded by ``ops promote``
  (a ``promote`` record that promoted), i.e. what each production version was accepted by;
* **funnel runs**: the change and the baseline of every offline-to-online funnel row.

The runs and their query rows go in one write transaction; then the engine reclaims the space
(SQLite ``VACUUM``: the file shrinks; PostgreSQL ``VACUUM``: the space is reused by later runs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from recallwatch._durations import count_back, span
from recallwatch.errors import HistoryError, UsageError
from recallwatch.history._store import History, RunSummary

__all__ = ["PruneReport", "nothing_to_prune", "prune_history"]

_BATCH = 500  # run ids per DELETE statement


@dataclass(frozen=True)
class PruneReport:
    location: str
    backend: str
    dry_run: bool
    keep_last: int | None
    keep_days: int | None
    runs_before: int
    removed: list[RunSummary]  # newest first
    protected: int  # runs outside the window kept because something points at them
    bytes_removed: int  # stored bytes of the removed runs and their query rows
    size_before: int  # the history's bytes on disk before ...
    size_after: int  # ... and after (the same for a dry run)
    not_reclaimed: str | None = None  # why the engine could not give the space back now
    exists: bool = True  # False: a dry run on a history file not created yet

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["removed"] = [r.to_dict() for r in self.removed]
        out["runs_after"] = self.runs_before - (0 if self.dry_run else len(self.removed))
        return out


def prune_history(history: History, *, keep_last: int | None = None,
                  keep_days: int | None = None, dry_run: bool = False,
                  now: datetime | None = None) -> PruneReport:
    """Remove the runs outside the window (the last ``keep_last`` runs, or those of the last
    ``keep_days`` days; with both, a run either keeps is kept) that nothing points at."""
    cutoff = _window(keep_last, keep_days, now)
    db = history._db
    size_before = db.size_bytes()
    try:
        with history._write():  # nothing is recorded meanwhile: the baselines cannot move
            runs, removed, protected, removed_bytes = _select(history, keep_last, cutoff, dry_run)
    except db.errors as exc:  # a read-only file or folder, a full disk…
        raise HistoryError(f"{history.location}: cannot prune the run history: "
                           f"{db.describe(exc)} (nothing was removed: pruning needs to write "
                           "to the history file and its folder)") from None
    not_reclaimed = None
    if removed and not dry_run:
        try:  # the runs are gone already; a reader holding the file only delays the compaction
            db.reclaim()
        except db.errors as exc:
            not_reclaimed = (f"the space was not reclaimed yet ({db.describe(exc)}): the next "
                             "prune reclaims it")
    return PruneReport(history.location, history.backend, dry_run, keep_last, keep_days,
                       len(runs), removed, protected, removed_bytes, size_before,
                       size_before if dry_run else db.size_bytes(), not_reclaimed)


def nothing_to_prune(location: str, *, keep_last: int | None = None,
                     keep_days: int | None = None) -> PruneReport:
    """The dry run of a history file that does not exist yet (the gate has not recorded a run):
    nothing to prune. The window is checked as :func:`prune_history` checks it."""
    _window(keep_last, keep_days, None)
    return PruneReport(location, "sqlite", True, keep_last, keep_days, 0, [], 0, 0, 0, 0,
                       exists=False)


def _window(keep_last: int | None, keep_days: int | None, now: datetime | None
            ) -> datetime | None:
    """The checked window: the date before which runs are outside it (None: by count alone)."""
    _check(keep_last, "--keep-last")
    _check(keep_days, "--keep-days")
    if keep_last is None and keep_days is None:
        raise UsageError("history prune: say what to keep: --keep-last N (the newest N runs) or "
                         "--keep-days N (the runs of the last N days), or both")
    return None if keep_days is None else count_back(
        now or datetime.now(UTC), span(keep_days, "days", "--keep-days", whole=True))


def _select(history: History, keep_last: int | None, cutoff: datetime | None, dry_run: bool
            ) -> tuple[list[RunSummary], list[RunSummary], int, int]:
    """Inside the write transaction: every run (newest first), the runs removed (deleted
    unless ``dry_run``), how many outside the window were kept, and the removed runs' bytes."""
    db = history._db
    runs = history.runs()  # newest first
    in_window = {r.run_id for i, r in enumerate(runs)
                 if (keep_last is not None and i < keep_last)
                 or (cutoff is not None and _when(r.created_at) >= cutoff)}
    pointed = _pointed_at(history, runs)
    removed = [r for r in runs if r.run_id not in in_window and r.run_id not in pointed]
    protected = sum(1 for r in runs if r.run_id not in in_window and r.run_id in pointed)
    ids = [r.run_id for r in removed]
    removed_bytes = _bytes_of(history, ids)
    if not dry_run:
        for start in range(0, len(ids), _BATCH):
            batch = ids[start:start + _BATCH]
            marks = ", ".join("?" for _ in batch)
            for table in ("query_results", "run_timings", "runs"):
                db.execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", batch)
    return runs, removed, protected, removed_bytes


def _check(value: int | None, option: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise UsageError(f"history prune: {option} takes a whole number of 0 or more, found "
                         f"{value!r}")


def _when(created_at: str) -> datetime:
    when = datetime.fromisoformat(created_at)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _pointed_at(history: History, runs: list[RunSummary]) -> set[str]:
    """Every run a baseline, a promotion or a funnel row points at."""
    keep: set[str] = set()
    latest_accept: set[tuple[str, str]] = set()
    latest_of: set[str] = set()
    for r in runs:  # newest first: the first of each is the latest
        if r.dataset_name not in latest_of:
            latest_of.add(r.dataset_name)
            keep.add(r.run_id)
        if r.verdict == "ACCEPT" and (r.dataset_hash, r.policy_hash) not in latest_accept:
            latest_accept.add((r.dataset_hash, r.policy_hash))
            keep.add(r.run_id)
    for m in history.monitor_runs(kind="promote"):
        run = m.payload.get("accepted_run")
        if m.payload.get("promoted") and isinstance(run, str):
            keep.add(run)
    for row in history.online_readouts():
        keep.add(row.change_run)
        if row.offline_baseline:
            keep.add(row.offline_baseline)
    return keep


def _bytes_of(history: History, ids: list[str]) -> int:
    """Stored bytes of these runs' rows: every text and binary value of the run rows and their
    query rows, and 8 bytes a number."""
    db = history._db
    run_text = ("run_id", "created_at", "dataset_name", "dataset_version", "dataset_hash",
                "policy_hash", "config_hash", "embedder", "store_uri", "index_version",
                "verdict", "result_json", "result_zlib")
    query_text = ("run_id", "query_id", "domain", "failed_rules", "expected", "diagnosis")
    total = 0
    for table, text, numbers in (("runs", run_text, 9), ("query_results", query_text, 7),
                                 ("run_timings", ("run_id", "series", "ms_zlib"), 1)):
        size = " + ".join(f"COALESCE({db.byte_length(c)}, 0)" for c in text)
        for start in range(0, len(ids), _BATCH):
            batch = ids[start:start + _BATCH]
            marks = ", ".join("?" for _ in batch)
            row = db.execute(f"SELECT COALESCE(sum({size} + {8 * numbers}), 0) FROM {table} "
                             f"WHERE run_id IN ({marks})", batch)
            total += int(row[0][0])
    return total
