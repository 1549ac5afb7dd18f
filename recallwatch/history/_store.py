"""The run history: a SQLite file (stdlib ``sqlite3``) or a PostgreSQL database, safe under
concurrent writers and kills.

* readers never block the writer, and writers wait their turn (SQLite: WAL journal and a busy
  timeout; PostgreSQL: an advisory lock per history and ``lock_timeout``);
* a run is written in one write transaction (the run row and every query row), so a process
  killed at any moment leaves either the whole run or nothing;
* a committed run survives a power cut, not only a killed process (SQLite ``synchronous=FULL``;
  PostgreSQL's WAL).

Every query below is written once, for both engines; :mod:`._backend` holds what differs.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from recallwatch._redact import redact
from recallwatch.acceptance.model import GateResult
from recallwatch.errors import HistoryError, UsageError
from recallwatch.history._backend import Backend
from recallwatch.history._detail import pack, unpack
from recallwatch.history._open import open_backend
from recallwatch.history._schema import ANSWER_COLUMNS, answer_columns
from recallwatch.history._timings import attach_timings, split_timings

__all__ = ["BaselinesMoved", "History", "MonitorRun", "OnlineReadoutRow", "RunSummary"]

BUSY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RunSummary:
    """One gate run's identity and aggregates: a row of ``runs`` without its full JSON."""

    seq: int
    run_id: str
    created_at: str
    dataset_name: str
    dataset_version: str
    dataset_hash: str
    policy_hash: str
    config_hash: str
    store_uri: str | None
    index_version: str | None
    verdict: str
    n_queries: int
    mean_quality: float
    mean_recall: float
    mean_precision: float
    mrr: float
    mean_ndcg: float
    mean_noise: float
    failed_queries: int
    # the answer measures (gate --answers/--generator; history._schema.ANSWER_COLUMNS): None
    # for a run that judged no answers, or whose judge was not trusted with the measure
    faithfulness: float | None = None
    answer_relevance: float | None = None
    correctness: float | None = None
    hallucination_rate: float | None = None

    @property
    def has_answers(self) -> bool:
        """Whether the run holds an answer measure."""
        return any(v is not None for v in (self.faithfulness, self.answer_relevance,
                                           self.correctness, self.hallucination_rate))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SUMMARY_COLUMNS = ", ".join(f.name for f in fields(RunSummary))


@dataclass(frozen=True)
class MonitorRun:
    """One record of the operations layer: a kind (``drift``, ``latency``, ``promote``…) and its
    figures."""

    id: int
    kind: str
    created_at: str
    store_uri: str | None
    index_version: str | None
    status: str | None
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class OnlineReadoutRow:
    """One change of the offline-to-online funnel: its offline delta and its online readout."""

    id: int
    created_at: str
    change_run: str
    promote_id: int | None
    offline_metric: str
    offline_baseline: str | None
    offline_delta: float | None
    online_metric: str
    online_delta: float | None
    online_ci_low: float | None
    online_ci_high: float | None
    online_verdict: str
    agreement: str
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_READOUT_COLUMNS = [f.name for f in fields(OnlineReadoutRow)]


class BaselinesMoved(HistoryError):
    """Another run was recorded between a comparison and its write (internal: compare again)."""


_LONGEST_REF = 200  # characters of a run reference; ids are about 23


class History:
    """A run history: a SQLite file, or a PostgreSQL database (``postgresql://…``). The same
    tables, queries and guarantees on both (see :mod:`._backend`).

    ``create=False`` refuses a missing history instead of creating one (the read-only commands: a
    typo in ``--history`` should not answer "no runs"). ``read_only=True`` (the dashboard) opens
    it so that the engine itself refuses every write; nothing is migrated, and a history lacking
    a migration is refused rather than half-read.
    """

    def __init__(self, location: str | Path, *, create: bool = True,
                 timeout: float = BUSY_TIMEOUT_S, read_only: bool = False) -> None:
        self._db = open_backend(location, create=create, timeout=timeout, read_only=read_only)
        #: what messages name: the file path, or the URI with any password redacted
        self.location = self._db.location

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.kind

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[Backend]:
        """One write transaction; no other writer of this history runs until it ends."""
        self._db.begin_write()
        try:
            yield self._db
        except BaseException:
            self._db.rollback()
            raise
        self._db.commit()

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params)
        except self._db.errors as exc:
            raise HistoryError(f"{self.location}: cannot read the run history: "
                               f"{self._db.describe(exc)}") from None

    # -- gate runs -------------------------------------------------------------------------------

    def record(self, result: GateResult, *,
               expect_baselines: tuple[str | None, str | None] | None = None) -> None:
        """Write a complete gate run (run row + every query row) in one transaction.

        ``expect_baselines``: the (previous, last accepted) run ids the comparison was made
        against; if another process recorded a run that changes them meanwhile, nothing is
        written and :class:`BaselinesMoved` is raised, so the caller compares again.
        """
        def unchanged() -> GateResult:
            if expect_baselines is not None and expect_baselines != self.baseline_ids(result):
                raise BaselinesMoved(result.run_id)
            return result

        self.record_computed(unchanged, run_id=result.run_id)

    def record_computed(self, compute: Callable[[], GateResult], *, run_id: str) -> GateResult:
        """Hold the write lock, call ``compute()`` (it may read this history: it sees every run
        committed before, and no other can be added meanwhile), and write the run it returns, all
        in one transaction."""
        db = self._db
        try:
            with self._write():
                result = compute()
                self._insert(db, result)
        except db.duplicate as exc:
            raise HistoryError(f"{self.location}: run {run_id} cannot be recorded: "
                               f"{db.describe(exc)}") from None
        except db.errors as exc:
            raise HistoryError(f"{self.location}: cannot write run {run_id}: "
                               f"{db.describe(exc)}") from None
        return result

    def baseline_ids(self, result: GateResult, *,
                     before_seq: int | None = None) -> tuple[str | None, str | None]:
        """(previous run of the dataset name, last ACCEPT of the dataset and policy hash)."""
        return (self.previous_run(result.dataset.get("name", ""), before_seq=before_seq),
                self.last_accepted(result.dataset_hash, result.policy_hash,
                                   before_seq=before_seq))

    @staticmethod
    def _insert(db: Backend, result: GateResult) -> None:
        data = result.to_dict()
        store = dict(result.store)
        if "uri" in store:
            store["uri"] = redact(str(store["uri"]))  # defensively: never store a password
        data["store"] = store
        data["cost"], timings = split_timings(result.cost)  # stored apart: run_timings
        embedder = result.config.embedder
        a = result.aggregate
        db.execute(
            "INSERT INTO runs (run_id, created_at, dataset_name, dataset_version, "
            "dataset_hash, policy_hash, config_hash, embedder, store_uri, index_version, "
            "verdict, n_queries, mean_quality, mean_recall, mean_precision, mrr, "
            "mean_ndcg, mean_noise, failed_queries, result_json, result_zlib, "
            f"{', '.join(ANSWER_COLUMNS)}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (result.run_id, result.created_at, result.dataset.get("name", ""),
             str(result.dataset.get("version", "")), result.dataset_hash, result.policy_hash,
             result.config_hash,
             None if embedder is None else json.dumps(embedder, sort_keys=True),
             store.get("uri"), None if store.get("version") is None else str(store["version"]),
             result.verdict, a.n_queries, a.mean_quality, a.mean_recall, a.mean_precision,
             a.mrr, a.mean_ndcg, a.mean_noise, a.failed_queries,
             "", pack(json.dumps(data, ensure_ascii=False, default=str)),
             *answer_columns(data)),
        )
        db.executemany(
            "INSERT INTO query_results (run_id, query_id, domain, passed, recall, quality, "
            "noise, precision, rr, ndcg, failed_rules, expected, diagnosis) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(result.run_id, q.id, q.domain, int(q.passed), q.recall, q.quality, q.noise,
              q.precision, q.rr, q.ndcg, json.dumps(list(q.failed_rules)),
              json.dumps([asdict(h) for h in q.expected], ensure_ascii=False),
              json.dumps([asdict(d) for d in q.diagnosis], ensure_ascii=False, default=str))
             for q in result.queries],
        )
        if timings:
            db.executemany("INSERT INTO run_timings (run_id, series, calls, ms_zlib) "
                           "VALUES (?, ?, ?, ?)",
                           [(result.run_id, *row) for row in timings])

    def runs(self, *, dataset: str | None = None, limit: int | None = None,
             offset: int = 0) -> list[RunSummary]:
        """Runs, newest first; ``dataset`` keeps one dataset name; ``offset`` skips that many
        of the newest (a page of ``limit`` runs)."""
        sql = f"SELECT {_SUMMARY_COLUMNS} FROM runs"
        params: list[Any] = []
        if dataset is not None:
            sql += " WHERE dataset_name = ?"
            params.append(dataset)
        sql += " ORDER BY seq DESC"
        if limit is not None:  # (SQLite takes OFFSET only after a LIMIT)
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        rows = self._query(sql, params)
        return [RunSummary(*row) for row in (rows if limit is not None else rows[offset:])]

    def count_runs(self, *, dataset: str | None = None) -> int:
        """How many runs the history holds (of one dataset name)."""
        where, params = ("", ()) if dataset is None else (" WHERE dataset_name = ?", (dataset,))
        return int(self._query(f"SELECT COUNT(*) FROM runs{where}", params)[0][0])

    def dataset_names(self) -> list[str]:
        """The dataset names of the recorded runs, sorted."""
        return sorted(str(r[0]) for r in self._query("SELECT DISTINCT dataset_name FROM runs"))

    def summary(self, run_id: str) -> RunSummary:
        rows = self._query(f"SELECT {_SUMMARY_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise UsageError(f"no run {run_id!r} in {self.location}")
        return RunSummary(*rows[0])

    def load(self, run_id: str) -> GateResult:
        """The full result of a run, as the gate produced it (comparison included)."""
        rows = self._query("SELECT result_json, result_zlib FROM runs WHERE run_id = ?",
                           (run_id,))
        if not rows:
            raise UsageError(f"no run {run_id!r} in {self.location}")
        timings = self._query("SELECT series, ms_zlib FROM run_timings WHERE run_id = ?",
                              (run_id,))
        try:
            data = json.loads(unpack(*rows[0]))
            attach_timings(data, timings)
            return GateResult.from_dict(data)
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            raise HistoryError(f"{self.location}: run {run_id} is unreadable: {exc}") from None

    def resolve(self, ref: str, *, dataset: str | None = None) -> str:
        """A run id from ``latest``, ``previous`` (the one before latest), ``accepted`` (the latest
        ACCEPT), a full run id or a unique prefix of one."""
        scope, params = ("WHERE dataset_name = ?", [dataset]) if dataset else ("", [])
        and_ = "AND" if scope else "WHERE"
        named = {
            "latest": (f"SELECT run_id FROM runs {scope} ORDER BY seq DESC LIMIT 1", params),
            "previous": (f"SELECT run_id FROM runs {scope} ORDER BY seq DESC LIMIT 1 OFFSET 1",
                         params),
            "accepted": (f"SELECT run_id FROM runs {scope} {and_} verdict = 'ACCEPT' "
                         "ORDER BY seq DESC LIMIT 1", params),
        }
        if ref in named:
            rows = self._query(*named[ref])
            if not rows:
                where = f" of dataset {dataset!r}" if dataset else ""
                raise UsageError(f"no {ref} run{where} in {self.location}")
            return str(rows[0][0])
        if len(ref) > _LONGEST_REF:  # no run id is this long (and SQLite refuses such a LIKE)
            raise UsageError(f"no run {ref[:40]!r}… in {self.location}: {len(ref):,} characters, "
                             f"where a run id has at most {_LONGEST_REF} (give a run id, a "
                             "unique prefix, latest, previous or accepted)")
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._query(
            # lower() on both sides: SQLite's LIKE ignores ASCII case, PostgreSQL's does not
            f"SELECT run_id FROM runs {scope} {and_} "
            "(run_id = ? OR lower(run_id) LIKE lower(?) ESCAPE '\\') "
            "ORDER BY seq DESC LIMIT 11", [*params, ref, escaped + "%"],
        )
        ids = [str(r[0]) for r in rows]
        if ref in ids:
            return ref
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise UsageError(f"no run {ref!r} in {self.location} (give a run id, a unique prefix, "
                             "latest, previous or accepted; `recallwatch history list` shows them)")
        shown = ", ".join(ids[:10]) + (" …" if len(ids) > 10 else "")
        raise UsageError(f"run prefix {ref!r} is ambiguous: it matches {shown}")

    def previous_run(self, dataset_name: str, *, before_seq: int | None = None) -> str | None:
        """The latest run of a dataset name (any hash: a changed golden set is reported as not
        comparable rather than silently skipped)."""
        rows = self._query(
            "SELECT run_id FROM runs WHERE dataset_name = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
            (dataset_name, _max_seq(before_seq)),
        )
        return str(rows[0][0]) if rows else None

    def last_accepted(self, dataset_hash: str, policy_hash: str, *,
                      before_seq: int | None = None) -> str | None:
        """The latest ACCEPT of exactly this golden set and policy: the baseline. A STOP run is
        never a baseline."""
        rows = self._query(
            "SELECT run_id FROM runs WHERE dataset_hash = ? AND policy_hash = ? "
            "AND verdict = 'ACCEPT' AND seq < ? ORDER BY seq DESC LIMIT 1",
            (dataset_hash, policy_hash, _max_seq(before_seq)),
        )
        return str(rows[0][0]) if rows else None

    def runs_on(self, store_uri: str, index_version: str, *, dataset_hash: str | None = None,
                policy_hash: str | None = None) -> list[RunSummary]:
        """Gate runs of one store version, newest first, optionally of one golden set and
        policy."""
        sql = (f"SELECT {_SUMMARY_COLUMNS} FROM runs WHERE store_uri = ? AND index_version = ?")
        params: list[Any] = [redact(store_uri), str(index_version)]
        for column, value in (("dataset_hash", dataset_hash), ("policy_hash", policy_hash)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        return [RunSummary(*row) for row in self._query(sql + " ORDER BY seq DESC", params)]

    def latest_on_store(self, store_uri: str) -> RunSummary | None:
        rows = self._query(f"SELECT {_SUMMARY_COLUMNS} FROM runs WHERE store_uri = ? "
                           "ORDER BY seq DESC LIMIT 1", (redact(store_uri),))
        return RunSummary(*rows[0]) if rows else None

    # -- monitor runs (operations layer) ---------------------------------------------------------

    def record_monitor_run(self, kind: str, payload: dict[str, Any], *,
                           store_uri: str | None = None, index_version: str | None = None,
                           status: str | None = None, created_at: str | None = None) -> int:
        """Append one operations record (drift probe, latency, error budget, promotion…)."""
        when = created_at or datetime.now(UTC).isoformat(timespec="seconds")
        row = (kind, when, None if store_uri is None else redact(store_uri),
               None if index_version is None else str(index_version), status,
               json.dumps(payload, ensure_ascii=False, default=str))
        try:
            with self._write() as db:
                return int(db.execute(
                    "INSERT INTO monitor_runs (kind, created_at, store_uri, index_version, status, "
                    "payload) VALUES (?, ?, ?, ?, ?, ?) RETURNING id", row,
                )[0][0])
        except self._db.errors as exc:
            raise HistoryError(f"{self.location}: cannot write a {kind} record: "
                               f"{self._db.describe(exc)}") from None

    def monitor_runs(self, *, kind: str | None = None,
                     limit: int | None = None) -> list[MonitorRun]:
        """Operations records, newest first."""
        sql = ("SELECT id, kind, created_at, store_uri, index_version, status, payload "
               "FROM monitor_runs")
        params: list[Any] = []
        if kind is not None:
            sql += " WHERE kind = ?"
            params.append(kind)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [MonitorRun(id=row[0], kind=row[1], created_at=row[2], store_uri=row[3],
                           index_version=row[4], status=row[5], payload=json.loads(row[6]))
                for row in self._query(sql, params)]

    # -- the offline-to-online funnel -----------------------------------------------------------

    def record_online_readout(self, row: dict[str, Any]) -> int:
        """Append one funnel row (:class:`OnlineReadoutRow`'s fields but ``id``; ``payload`` a
        dict); its id."""
        values = dict(row)
        values.setdefault("created_at", datetime.now(UTC).isoformat(timespec="seconds"))
        values["payload"] = json.dumps(values["payload"], ensure_ascii=False, default=str)
        cols = _READOUT_COLUMNS[1:]
        try:
            with self._write() as db:
                return int(db.execute(
                    f"INSERT INTO online_readouts ({', '.join(cols)}) VALUES "
                    f"({', '.join('?' for _ in cols)}) RETURNING id",
                    [values[c] for c in cols])[0][0])
        except self._db.errors as exc:
            raise HistoryError(f"{self.location}: cannot write an online readout: "
                               f"{self._db.describe(exc)}") from None

    def online_readouts(self, *, limit: int | None = None) -> list[OnlineReadoutRow]:
        """Funnel rows, newest first."""
        sql = f"SELECT {', '.join(_READOUT_COLUMNS)} FROM online_readouts ORDER BY id DESC"
        params: list[Any] = []
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [OnlineReadoutRow(**{**dict(zip(_READOUT_COLUMNS, row)),
                                    "payload": json.loads(row[-1])})
                for row in self._query(sql, params)]

    def integrity_check(self) -> str:
        """``ok``, or what is wrong (SQLite: ``PRAGMA integrity_check``; PostgreSQL: the schema is
        this recallwatch's and every table reads)."""
        try:
            return self._db.integrity_check()
        except self._db.errors as exc:
            raise HistoryError(f"{self.location}: cannot read the run history: "
                               f"{self._db.describe(exc)}") from None


def _max_seq(before_seq: int | None) -> int:
    return 2**62 if before_seq is None else before_seq
