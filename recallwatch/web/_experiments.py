"""The dashboard's experiments: those recorded in the history (``recallwatch experiment
--history``) and the ``results.json`` files of ``recallwatch experiment`` found under the
directories the dashboard was given (``ops serve --experiments DIR``), listed, and each one's
ranked table and quality-vs-cost plot, the same as its self-contained report shows.

A directory given is an experiment's output directory, or a folder holding several (searched two
levels down). A recorded experiment whose results are also in a folder given (the same text) is
listed once, from the folder. Pure functions of the files and the history (no web framework
here), so they are tested without a server.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recallwatch.errors import InputError, UsageError
from recallwatch.formats.structured import load_structured
from recallwatch.history import (
    ExperimentRecord,
    History,
    experiment_results,
    recorded_experiments,
    results_digest,
)

__all__ = ["MAX_EXPERIMENTS", "experiment_id", "experiment_view", "experiments_view"]

MAX_EXPERIMENTS = 200
_SCHEMA = "recallwatch.experiment/1"


def experiment_id(path: Path) -> str:
    """A short, stable name for the experiment at ``path`` (its page's address)."""
    return hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:12]


def _candidates(dirs: Sequence[Path]) -> list[Path]:
    found: dict[Path, None] = {}
    for d in dirs:
        for pattern in ("results.json", "*/results.json", "*/*/results.json"):
            for path in sorted(d.glob(pattern)):
                found.setdefault(path.resolve(), None)
    return list(found)[:MAX_EXPERIMENTS]


def _load(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The record, or why the file is not an experiment's results."""
    try:
        doc = load_structured(path)
    except (OSError, InputError) as exc:  # InputError: not UTF-8, not JSON, hostile JSON
        return None, f"unreadable: {exc}"
    if not isinstance(doc, dict) or doc.get("schema") != _SCHEMA:
        return None, f"not an experiment's results (no schema {_SCHEMA})"
    if not isinstance(doc.get("variants"), list) or not doc["variants"]:
        return None, "an experiment's results without variants"
    return doc, None


def _recorded_row(r: ExperimentRecord) -> dict[str, Any]:
    when = datetime.fromisoformat(r.created_at)
    return {"id": f"h{r.id}", "dir": r.out_dir, "plan": r.plan, "winner": r.winner or "",
            "base": r.base or "", "chosen_on": r.chosen_on or "", "confirmed": r.confirmed,
            "variants": r.variants, "written": when.strftime("%Y-%m-%d %H:%M UTC"),
            "mtime": when, "recorded": True}


def experiments_view(dirs: Sequence[Path], history: History | None = None) -> dict[str, Any]:
    """Every experiment recorded in ``history`` or found under ``dirs``, newest first, and the
    files skipped with the reason."""
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    for path in _candidates(dirs):
        doc, why = _load(path)
        if doc is None:
            skipped.append((str(path), why))
            continue
        seen.add(results_digest(path.read_text(encoding="utf-8")))
        when = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        rows.append({"id": experiment_id(path), "dir": str(path.parent),
                     "plan": str(doc.get("plan", "")), "winner": str(doc.get("winner", "")),
                     "base": str(doc.get("base", "")), "chosen_on": str(doc.get("chosen_on", "")),
                     "confirmed": doc.get("confirmed"), "variants": len(doc["variants"]),
                     "written": when.strftime("%Y-%m-%d %H:%M UTC"), "mtime": when,
                     "recorded": False})
    recorded = [] if history is None else recorded_experiments(history, limit=MAX_EXPERIMENTS)
    rows += [_recorded_row(r) for r in recorded if r.digest not in seen]
    rows.sort(key=lambda r: float(r["mtime"].timestamp()), reverse=True)
    return {"dirs": [str(d) for d in dirs], "missing": [str(d) for d in dirs if not d.is_dir()],
            "experiments": rows[:MAX_EXPERIMENTS], "skipped": skipped,
            "recorded": len(recorded)}


def _shown(source: str, doc: dict[str, Any]) -> dict[str, Any]:
    from recallwatch.experiment.output import view

    try:
        return view(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{source}: malformed experiment results ({type(exc).__name__}: "
                         f"{exc})") from None


def experiment_view(dirs: Sequence[Path], exp_id: str,
                    history: History | None = None) -> dict[str, Any]:
    """The page of one experiment: its table and plot (UsageError, a 404, when none has the
    id or its file is not an experiment's results). ``h<N>`` is experiment N of the history."""
    if history is not None and exp_id[:1] == "h" and exp_id[1:].isdigit():
        record, recorded = experiment_results(history, int(exp_id[1:]))
        source = f"{history.location}, experiment {record.id}"
        return {"path": source, "dir": record.out_dir, "plan": record.plan,
                "exp": _shown(source, recorded),
                "warnings": list(recorded.get("warnings") or [])}
    for path in _candidates(dirs):
        if experiment_id(path) != exp_id:
            continue
        doc, why = _load(path)
        if doc is None:
            raise UsageError(f"{path}: {why}")
        return {"path": str(path), "dir": str(path.parent), "plan": str(doc.get("plan", "")),
                "exp": _shown(str(path), doc), "warnings": list(doc.get("warnings") or [])}
    raise UsageError(f"no experiment {exp_id!r} under {', '.join(map(str, dirs)) or 'no folder'}"
                     " (the list is at /experiments)")
