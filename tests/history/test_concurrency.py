"""Real processes: 8 writers at once all succeed; SIGKILL mid-write leaves no partial run — on a
SQLite file and on PostgreSQL (``history_at``: each test runs on both)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recallwatch.history import History
from tests.history.helpers import gate_run, golden_set, raw_backend

ROOT = Path(__file__).resolve().parents[2]


def _writer(db: str, template: Path, tag: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.history._writer", db, str(template), tag, str(count)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _template(tmp_path: Path, n_queries: int, *, accept: bool = False) -> Path:
    """A gate run to record again and again: a STOP (q01 misses one chunk), or an ACCEPT."""
    run = gate_run(golden_set(n_queries), None if accept else {"q01": {"q01_b": 12}})
    assert run.verdict == ("ACCEPT" if accept else "STOP")
    path = tmp_path / f"template-{run.verdict}.json"
    from recallwatch.report import to_json

    path.write_text(to_json(run), encoding="utf-8")
    return path


def _check_whole(db: str) -> list[str]:
    """Every run row has all its query rows and readable JSON; integrity_check is ok. Writers
    killed before the first migration committed leave no table at all."""
    with raw_backend(db) as conn:
        if not conn.has_table("schema_migrations"):
            assert not conn.has_table("runs") and not conn.has_table("monitor_runs")
            return []
        assert conn.integrity_check() == "ok"
        rows = conn.execute(
            "SELECT r.run_id, r.n_queries, (SELECT COUNT(*) FROM query_results q "
            "WHERE q.run_id = r.run_id) FROM runs r ORDER BY r.seq")
        orphans = conn.execute("SELECT COUNT(*) FROM query_results WHERE run_id NOT IN "
                               "(SELECT run_id FROM runs)")[0][0]
    assert orphans == 0
    for run_id, n, found in rows:
        assert found == n, f"run {run_id}: {found} of {n} query rows"
    return [r[0] for r in rows]


def test_eight_processes_writing_at_once_all_succeed(tmp_path: Path, history_at: str) -> None:
    db = history_at
    templates = [_template(tmp_path, 30), _template(tmp_path, 30, accept=True)]
    per_process = 4
    procs = [_writer(db, templates[i % 2], f"w{i}", per_process) for i in range(8)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert out.count("committed ") == per_process
    ids = _check_whole(db)
    assert sorted(ids) == sorted(f"w{i}-{j:04d}" for i in range(8) for j in range(per_process))
    with History(db) as h:
        # Each later run was compared with an earlier one: the comparison is stored with it.
        compared = [h.load(i).comparison for i in ids]
        # ... and with the run recorded just before it: baselines re-read inside the write lock.
        assert [c is not None and c["previous"] is not None for c in compared[1:]] == \
            [True] * (len(ids) - 1)
        assert all(c is not None and c["previous"]["run_id"] == ids[i]
                   for i, c in enumerate(compared[1:]))
        # The other baseline, the last ACCEPT, is likewise the one committed just before.
        verdicts = [h.summary(i).verdict for i in ids]
        last_accept = None
        for run_id, verdict, c in zip(ids, verdicts, compared, strict=True):
            got = c["last_accepted"] if c is not None else None
            assert (got["run_id"] if got else None) == last_accept, run_id
            if verdict == "ACCEPT":
                last_accept = run_id
        assert last_accept is not None and "STOP" in verdicts


def test_sigkill_at_random_points_leaves_no_partial_run(tmp_path: Path, history_at: str) -> None:
    db, template = history_at, _template(tmp_path, 400)
    rng = random.Random(5)
    committed: set[str] = set()
    for attempt in range(6):
        proc = _writer(db, template, f"k{attempt}", 0)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        committed |= {line.split()[1] for line in out.splitlines()
                      if line.startswith("committed ")}
        ids = set(_check_whole(db))
        # Nothing acknowledged is lost; at most the run being written when killed is absent.
        assert committed <= ids
        assert len(ids - committed) <= attempt + 1
    assert committed, "the writer never committed: the kill test tested nothing"
    with History(db) as h:
        assert h.integrity_check() == "ok"
        assert len(h.runs()) >= len(committed)


@pytest.mark.slow
def test_many_kills_during_concurrent_writes(tmp_path: Path, history_at: str) -> None:
    db, template = history_at, _template(tmp_path, 200)
    rng = random.Random(11)
    committed: set[str] = set()
    for attempt in range(10):
        procs = [_writer(db, template, f"c{attempt}x{i}", 0) for i in range(4)]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.2, 1.0))
        for p in procs:
            p.send_signal(signal.SIGKILL)
        for p in procs:
            out, _ = p.communicate(timeout=60)
            committed |= {line.split()[1] for line in out.splitlines()
                          if line.startswith("committed ")}
        assert committed <= set(_check_whole(db))

