"""The history database's schema: named migrations, applied in order and recorded.

Each migration is a name and its DDL. A database remembers which ones it has in
``schema_migrations``; opening it applies the missing ones in one write transaction, so several
processes opening the same new history at once apply each migration exactly once. A migration
that also rewrites stored rows names its data step in :data:`DATA_STEPS`. Migrations are
append-only: a released one is never edited (an existing history was built from its text). The
DDL is written for SQLite; a PostgreSQL backend translates its column types
(:meth:`~recallwatch.history._backend.Backend.ddl`), so both hold the same tables and columns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recallwatch.errors import HistoryError
from recallwatch.history._detail import pack, unpack

if TYPE_CHECKING:
    from recallwatch.history._backend import Backend

__all__ = ["ANSWER_COLUMNS", "DATA_STEPS", "MIGRATIONS", "SCHEMA_VERSION", "answer_columns",
           "check_schema", "migrate"]

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_runs_and_query_results", """
        CREATE TABLE runs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,   -- run order (created_at: 1 s resolution)
            run_id TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            dataset_name TEXT NOT NULL,
            dataset_version TEXT NOT NULL,
            dataset_hash TEXT NOT NULL,
            policy_hash TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            embedder TEXT,                           -- fingerprint JSON; NULL for a results file
            store_uri TEXT,                          -- always redacted
            index_version TEXT,
            verdict TEXT NOT NULL CHECK (verdict IN ('ACCEPT', 'STOP')),
            n_queries INTEGER NOT NULL,
            mean_quality REAL NOT NULL,
            mean_recall REAL NOT NULL,
            mean_precision REAL NOT NULL,
            mrr REAL NOT NULL,
            mean_ndcg REAL NOT NULL,
            mean_noise REAL NOT NULL,
            failed_queries INTEGER NOT NULL,
            result_json TEXT NOT NULL
        );
        CREATE TABLE query_results (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            query_id TEXT NOT NULL,
            domain TEXT,
            passed INTEGER NOT NULL,
            recall REAL NOT NULL,
            quality REAL NOT NULL,
            noise INTEGER NOT NULL,
            precision REAL NOT NULL,
            rr REAL NOT NULL,
            ndcg REAL NOT NULL,
            failed_rules TEXT NOT NULL,              -- JSON list
            expected TEXT NOT NULL,                  -- JSON [{id, rank, score, gold, in_top_k}]
            diagnosis TEXT NOT NULL,                 -- JSON list
            PRIMARY KEY (run_id, query_id)
        );
    """),
    ("0002_monitor_runs", """
        -- Generic rows for the operations layer (recall vs exact, latency, error budget, promote):
        -- a kind, when, where, a status, and the figures as JSON.
        CREATE TABLE monitor_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            created_at TEXT NOT NULL,
            store_uri TEXT,
            index_version TEXT,
            status TEXT,
            payload TEXT NOT NULL
        );
        CREATE INDEX monitor_runs_kind ON monitor_runs (kind, id);
    """),
    ("0003_run_lookup_indexes", """
        -- Baseline look-ups: the last ACCEPT of a dataset hash + policy hash, the last run of a
        -- dataset, the runs of a store version (promote).
        CREATE INDEX runs_baseline ON runs (dataset_hash, policy_hash, verdict, seq);
        CREATE INDEX runs_dataset ON runs (dataset_name, seq);
        CREATE INDEX runs_store ON runs (store_uri, index_version, seq);
    """),
    ("0004_online_readouts", """
        -- The offline-to-online funnel: a change (a gate run, or the promotion a gate run
        -- allowed) with its offline delta against its baseline and the online readout that
        -- came later (an A/B test's delta and verdict), and whether the two agreed.
        CREATE TABLE online_readouts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at TEXT NOT NULL,
            change_run TEXT NOT NULL,                -- the gate run the change was judged by
            promote_id INTEGER,                      -- its promote record, for a promotion
            offline_metric TEXT NOT NULL,
            offline_baseline TEXT,                   -- the run compared with; NULL: none
            offline_delta REAL,
            online_metric TEXT NOT NULL,
            online_delta REAL,
            online_ci_low REAL,
            online_ci_high REAL,
            online_verdict TEXT NOT NULL,
            agreement TEXT NOT NULL CHECK (agreement IN ('agreed', 'disagreed', 'undecided')),
            payload TEXT NOT NULL                    -- the readout and its log, as JSON
        );
        CREATE INDEX online_readouts_change ON online_readouts (change_run, id);
    """),
    ("0005_compact_run_detail", """
        -- A run's full result (the JSON that compare, trends and the dashboard read) stored
        -- zlib-compressed; result_json then holds ''. The runs already stored are compressed
        -- by this migration (its data step, in the same transaction).
        ALTER TABLE runs ADD COLUMN result_zlib BLOB;
    """),
    ("0006_experiments", """
        -- Each `recallwatch experiment --history` run: its plan, the folder it wrote, the
        -- winner, and its results.json (zlib-compressed; digest: the SHA-256 of that text), so
        -- the dashboard lists the experiments wherever the history is read.
        CREATE TABLE experiments (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at TEXT NOT NULL,
            plan TEXT NOT NULL,
            out_dir TEXT NOT NULL,
            base TEXT,
            winner TEXT,
            chosen_on TEXT,
            confirmed INTEGER,                       -- 1/0: the winner held on test; NULL: n/a
            variants INTEGER NOT NULL,
            digest TEXT NOT NULL,
            results_zlib BLOB NOT NULL
        );
    """),
    ("0007_run_timings", """
        -- Every timed call of a gate run on a store, in milliseconds, so that the next run's cost
        -- rule compares call for call rather than one p99 with another: one row per run and
        -- series (search_ms, embed_ms, and baseline.search_ms for the baseline's index timed
        -- interleaved), the values a JSON list, zlib-compressed. The run's result JSON holds
        -- them only in memory: they are stored here once.
        CREATE TABLE run_timings (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            series TEXT NOT NULL,
            calls INTEGER NOT NULL,
            ms_zlib BLOB NOT NULL,
            PRIMARY KEY (run_id, series)
        );
    """),
    ("0008_run_answer_measures", """
        -- A run's answer measures (gate --answers/--generator), beside its rank measures, so the
        -- run list and the trends show them without reading each run's full result: the means
        -- of faithfulness, relevance and correctness, and the hallucination rate. NULL when the
        -- run judged no answers or its judge was not trusted with the measure. The runs already
        -- stored get theirs from their stored result (this migration's data step).
        ALTER TABLE runs ADD COLUMN faithfulness REAL;
        ALTER TABLE runs ADD COLUMN answer_relevance REAL;
        ALTER TABLE runs ADD COLUMN correctness REAL;
        ALTER TABLE runs ADD COLUMN hallucination_rate REAL;
    """),
)

SCHEMA_VERSION = len(MIGRATIONS)
#: the answer measure columns of ``runs`` (0008) and the keys of the run's ``answers`` they hold
ANSWER_COLUMNS: dict[str, str] = {"faithfulness": "faithfulness",
                                  "answer_relevance": "relevance",
                                  "correctness": "correctness",
                                  "hallucination_rate": "hallucination_rate"}
_BATCH = 200  # runs rewritten per statement batch by a data step


def _compress_stored_runs(db: Backend) -> None:
    """0005's data step: every run's result JSON moved into ``result_zlib``, compressed."""
    last = -(2**62)
    while True:
        rows = db.execute("SELECT seq, result_json FROM runs WHERE seq > ? AND result_zlib IS "
                          f"NULL ORDER BY seq LIMIT {_BATCH}", (last,))
        if not rows:
            return
        db.executemany("UPDATE runs SET result_zlib = ?, result_json = '' WHERE seq = ?",
                       [(pack(str(text)), seq) for seq, text in rows])
        last = rows[-1][0]


def answer_columns(result: Mapping[str, Any]) -> tuple[float | None, ...]:
    """The values of the answer measure columns (:data:`ANSWER_COLUMNS`) from a run's result as
    JSON: None for a run without answers, and for a measure its judge was not trusted with."""
    answers = result.get("answers")
    if not isinstance(answers, Mapping):
        return (None,) * len(ANSWER_COLUMNS)
    return tuple(_number(answers.get(key)) for key in ANSWER_COLUMNS.values())


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _fill_answer_columns(db: Backend) -> None:
    """0008's data step: each stored run's answer measures, read from its stored result."""
    last = -(2**62)
    sets = ", ".join(f"{column} = ?" for column in ANSWER_COLUMNS)
    while True:
        rows = db.execute("SELECT seq, result_json, result_zlib FROM runs WHERE seq > ? "
                          f"ORDER BY seq LIMIT {_BATCH}", (last,))
        if not rows:
            return
        read = [(answer_columns(json.loads(unpack(text, packed))), seq)
                for seq, text, packed in rows]
        measured = [(*measures, seq) for measures, seq in read
                    if any(m is not None for m in measures)]
        if measured:
            db.executemany(f"UPDATE runs SET {sets} WHERE seq = ?", measured)
        last = rows[-1][0]


#: what a migration does beyond its DDL, by name (run right after it, in its transaction)
DATA_STEPS: dict[str, Callable[[Backend], None]] = {
    "0005_compact_run_detail": _compress_stored_runs,
    "0008_run_answer_measures": _fill_answer_columns,
}

_BOOKKEEPING = """
    CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        applied_at TEXT NOT NULL
    )
"""


def migrate(db: Backend) -> list[str]:
    """Apply the migrations ``db`` lacks, in one write transaction (SQLite ``BEGIN IMMEDIATE``,
    PostgreSQL the history's advisory lock); return their names. A database recording a
    migration this code does not know is refused (a newer recallwatch wrote it)."""
    known = {i + 1: name for i, (name, _) in enumerate(MIGRATIONS)}
    # Up to date (the usual case): nothing to write, so no writer's lock to wait for.
    if dict(_known_only(applied_migrations(db), known, db.location)) == known:
        return []
    db.begin_write()
    try:
        db.bootstrap()
        db.execute(db.ddl(_BOOKKEEPING))
        applied = dict(_known_only(
            db.execute("SELECT version, name FROM schema_migrations"), known, db.location))
        done = []
        for version, (name, ddl) in enumerate(MIGRATIONS, start=1):
            if version in applied:
                continue
            for statement in _statements(ddl):
                db.execute(db.ddl(statement))
            if name in DATA_STEPS:
                DATA_STEPS[name](db)
            db.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
            done.append(name)
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return done


def _known_only(rows: Sequence[tuple[Any, ...]], known: dict[int, str],
                source: str) -> list[tuple[int, str]]:
    """``rows`` of schema_migrations as (version, name); refused if one is not ours."""
    out = [(int(v), str(n)) for v, n in rows]
    for version, name in out:
        if known.get(version) != name:
            raise HistoryError(
                f"{source}: schema migration {version} {name!r} is unknown to this "
                f"recallwatch (it knows up to {SCHEMA_VERSION} {MIGRATIONS[-1][0]!r}); "
                "it was written by a newer version: upgrade recallwatch"
            )
    return out


def applied_migrations(db: Backend) -> list[tuple[int, str]]:
    """(version, name) of every migration ``db`` records, in order; none when it has no
    bookkeeping table."""
    if not db.has_table("schema_migrations"):
        return []
    rows = db.execute("SELECT version, name FROM schema_migrations ORDER BY version")
    return [(int(v), str(n)) for v, n in rows]


def check_schema(db: Backend) -> None:
    """For a read-only connection: the history must hold exactly the migrations this code knows
    (it cannot apply missing ones)."""
    source = db.location
    known = [(i + 1, name) for i, (name, _) in enumerate(MIGRATIONS)]
    applied = applied_migrations(db)
    if applied != known:
        have = applied[-1][1] if applied else "none"
        raise HistoryError(
            f"{source}: the run history's schema ({len(applied)} migrations, last {have!r}) is "
            f"not this recallwatch's ({SCHEMA_VERSION}, last {MIGRATIONS[-1][0]!r}); open it "
            "once with a writing command (e.g. `recallwatch gate … --history`) to migrate it, "
            "or upgrade recallwatch"
        )


def _statements(ddl: str) -> list[str]:
    # executescript() would COMMIT our transaction first; run the statements one by one instead.
    lines = [line.split("--", 1)[0] for line in ddl.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
