"""``recallwatch history copy SRC DST``: a history moved between backends (a SQLite file, a
PostgreSQL database), row for row: runs, query rows, monitor records, online readouts and
recorded experiments, and each run's per-call timings with it.

Every column of every row is copied as stored, ``seq`` and monitor ids included, so run order,
both baselines of every later run, run references and every stored comparison mean the same in
the copy. The destination is written in one write transaction (all or nothing) and must be empty
unless ``replace`` is given; the source is opened read-only and must be at this recallwatch's
schema version (the destination is migrated to it on opening). Rows are streamed in batches of
runs, each with its query rows, so a run recorded in the source meanwhile is copied whole or not
at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from recallwatch.errors import UsageError
from recallwatch.history._backend import Backend
from recallwatch.history._schema import applied_migrations
from recallwatch.history._store import History

__all__ = ["CopyReport", "copy_history"]

# Delete children first, insert parents first.
_TABLES = ("runs", "query_results", "run_timings", "monitor_runs", "online_readouts",
           "experiments")
_BATCH = 200


@dataclass(frozen=True)
class CopyReport:
    source: str  # redacted locations
    destination: str
    runs: int
    query_results: int
    monitor_runs: int
    schema_version: int
    replaced: dict[str, int]  # rows the destination held before (with replace)
    online_readouts: int = 0
    experiments: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def copy_history(source: str | Path, destination: str | Path, *, replace: bool = False,
                 progress: Callable[[int], None] | None = None) -> CopyReport:
    """Copy every run, query row and monitor record of ``source`` into ``destination``.

    ``destination`` is created (or migrated) if needed and must hold nothing unless ``replace``,
    which empties it in the same transaction. ``progress`` is called with the number of runs
    copied so far.
    """
    with History(source, read_only=True) as src, History(destination) as dst:
        if _same(source, destination, src, dst):
            raise UsageError(f"history copy: {src.location} is both the source and the "
                             "destination")
        with dst._write() as out:
            held = {t: int(out.execute(f"SELECT count(*) FROM {t}")[0][0]) for t in _TABLES}
            if any(held.values()) and not replace:
                raise UsageError(
                    f"history copy: {dst.location} is not empty ({held['runs']} run(s), "
                    f"{held['monitor_runs']} monitor record(s)); copying into it would mix two "
                    "histories: name an empty one, or pass --replace to empty it first")
            if replace:
                for table in ("query_results", "run_timings", "runs", "monitor_runs",
                              "online_readouts", "experiments"):
                    out.execute(f"DELETE FROM {table}")
            runs, queries = _copy_runs(src._db, out, progress)
            monitors = _copy_rows(src._db, out, "monitor_runs", "id")
            readouts = _copy_rows(src._db, out, "online_readouts", "id")
            experiments = _copy_rows(src._db, out, "experiments", "id")
            out.reset_identity("runs", "seq")
            out.reset_identity("monitor_runs", "id")
            out.reset_identity("online_readouts", "id")
            out.reset_identity("experiments", "id")
        version = len(applied_migrations(dst._db))
    return CopyReport(src.location, dst.location, runs, queries, monitors, version,
                      held if replace else {}, readouts, experiments)


def _same(source: str | Path, destination: str | Path, src: History, dst: History) -> bool:
    if src.backend != dst.backend:
        return False
    if src.backend == "sqlite":
        return Path(source).resolve() == Path(destination).resolve()
    return src.location == dst.location


def _insert(db: Backend, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    marks = ", ".join("?" for _ in columns)
    db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def _copy_runs(src: Backend, out: Backend,
               progress: Callable[[int], None] | None) -> tuple[int, int]:
    run_cols, query_cols = src.columns("runs"), src.columns("query_results")
    timing_cols = src.columns("run_timings")
    seq_at, id_at = run_cols.index("seq"), run_cols.index("run_id")
    n_runs = n_queries = 0
    last = -(2**62)
    while True:
        runs = src.execute(f"SELECT {', '.join(run_cols)} FROM runs WHERE seq > ? "
                           f"ORDER BY seq LIMIT {_BATCH}", (last,))
        if not runs:
            return n_runs, n_queries
        ids = [r[id_at] for r in runs]
        queries = src.execute(
            f"SELECT {', '.join(query_cols)} FROM query_results "
            f"WHERE run_id IN ({', '.join('?' for _ in ids)}) ORDER BY run_id, query_id", ids)
        timings = src.execute(
            f"SELECT {', '.join(timing_cols)} FROM run_timings "
            f"WHERE run_id IN ({', '.join('?' for _ in ids)}) ORDER BY run_id, series", ids)
        _insert(out, "runs", run_cols, runs)
        _insert(out, "query_results", query_cols, queries)
        _insert(out, "run_timings", timing_cols, timings)
        n_runs += len(runs)
        n_queries += len(queries)
        last = runs[-1][seq_at]
        if progress is not None:
            progress(n_runs)


def _copy_rows(src: Backend, out: Backend, table: str, key: str) -> int:
    cols = src.columns(table)
    at = cols.index(key)
    n, last = 0, -(2**62)
    while True:
        rows = src.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE {key} > ? "
                           f"ORDER BY {key} LIMIT {_BATCH * 10}", (last,))
        if not rows:
            return n
        _insert(out, table, cols, rows)
        n += len(rows)
        last = rows[-1][at]
