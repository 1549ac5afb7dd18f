"""Experiments in the history: each ``recallwatch experiment --history`` run recorded with its
``results.json`` (compressed), so that the dashboard lists a team's experiments wherever the
history is read (a shared PostgreSQL database), not only on the machine that holds the output
folder.

A record is written in one transaction after the output files are written; its ``digest`` (the
SHA-256 of the results text) lets the dashboard show once an experiment that it also finds in a
folder it was given.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from recallwatch.errors import HistoryError, UsageError
from recallwatch.history._detail import pack, unpack
from recallwatch.history._store import History

__all__ = [
    "ExperimentRecord",
    "experiment_results",
    "record_experiment",
    "recorded_experiments",
    "results_digest",
]

_COLUMNS = "id, created_at, plan, out_dir, base, winner, chosen_on, confirmed, variants, digest"


@dataclass(frozen=True)
class ExperimentRecord:
    """One recorded experiment, without its results (see :func:`experiment_results`)."""

    id: int
    created_at: str
    plan: str
    out_dir: str
    base: str | None
    winner: str | None
    chosen_on: str | None
    confirmed: bool | None
    variants: int
    digest: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def results_digest(text: str) -> str:
    """The SHA-256 of an experiment's ``results.json`` text, as recorded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_experiment(history: History, text: str, *, out_dir: str) -> int:
    """Record the experiment whose ``results.json`` is ``text``, written to ``out_dir``; its id."""
    doc = json.loads(text)
    confirmed = doc.get("confirmed")
    row = (datetime.now(UTC).isoformat(timespec="seconds"), str(doc.get("plan", "")), out_dir,
           doc.get("base"), doc.get("winner"), doc.get("chosen_on"),
           None if confirmed is None else int(bool(confirmed)), len(doc.get("variants") or []),
           results_digest(text), pack(text))
    db = history._db
    try:
        with history._write() as out:
            return int(out.execute(
                "INSERT INTO experiments (created_at, plan, out_dir, base, winner, chosen_on, "
                "confirmed, variants, digest, results_zlib) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "RETURNING id", row)[0][0])
    except db.errors as exc:
        raise HistoryError(f"{history.location}: cannot record the experiment: "
                           f"{db.describe(exc)}") from None


def _record(row: tuple[Any, ...]) -> ExperimentRecord:
    return ExperimentRecord(id=int(row[0]), created_at=str(row[1]), plan=str(row[2]),
                            out_dir=str(row[3]), base=row[4], winner=row[5], chosen_on=row[6],
                            confirmed=None if row[7] is None else bool(row[7]),
                            variants=int(row[8]), digest=str(row[9]))


def recorded_experiments(history: History, *, limit: int | None = None
                         ) -> list[ExperimentRecord]:
    """The recorded experiments, newest first."""
    sql = f"SELECT {_COLUMNS} FROM experiments ORDER BY id DESC"
    params: list[Any] = []
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [_record(r) for r in history._query(sql, params)]


def experiment_results(history: History, experiment_id: int) -> tuple[ExperimentRecord,
                                                                         dict[str, Any]]:
    """A recorded experiment and its ``results.json`` document (UsageError when none has the
    id)."""
    rows = history._query(f"SELECT {_COLUMNS}, results_zlib FROM experiments WHERE id = ?",
                          (experiment_id,))
    if not rows:
        raise UsageError(f"{history.location}: no recorded experiment {experiment_id}")
    doc: dict[str, Any] = json.loads(unpack("", rows[0][10]))
    return _record(rows[0]), doc
