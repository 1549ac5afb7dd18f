"""Real processes: 8 writers at once all succeed; SIGKILL mid-write leaves no partial run."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recallwatch.history import History
from tests.history.helpers import gate_run, golden_set

ROOT = Path(__file__).resolve().parents[2]


def _writer(db: Path, template: Path, tag: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.history._writer", str(db), str(template), tag, str(count)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _template(tmp_path: Path, n_queries: int) -> Path:
    run = gate_run(golden_set(n_queries), {"q01": {"q01_b": 12}})
    path = tmp_path / "template.json"
    from recallwatch.report import to_json

    path.write_text(to_json(run), encoding="utf-8")
    return path


def _check_whole(db: Path) -> list[str]:
    """Every run row has all its query rows and readable JSON; integrity_check is ok."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute(
            "SELECT r.run_id, r.n_queries, (SELECT COUNT(*) FROM query_results q "
            "WHERE q.run_id = r.run_id) FROM runs r ORDER BY r.seq").fetchall()
        orphans = conn.execute("SELECT COUNT(*) FROM query_results WHERE run_id NOT IN "
                               "(SELECT run_id FROM runs)").fetchone()[0]
    finally:
        conn.close()
    assert orphans == 0
    for run_id, n, found in rows:
        assert found == n, f"run {run_id}: {found} of {n} query rows"
    return [r[0] for r in rows]


def test_eight_processes_writing_at_once_all_succeed(tmp_path: Path) -> None:
    db, template = tmp_path / "h.db", _template(tmp_path, 30)
    per_process = 4
    procs = [_writer(db, template, f"w{i}", per_process) for i in range(8)]
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


def test_sigkill_at_random_points_leaves_no_partial_run(tmp_path: Path) -> None:
    db, template = tmp_path / "h.db", _template(tmp_path, 400)
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
def test_many_kills_during_concurrent_writes(tmp_path: Path) -> None:
    db, template = tmp_path / "h.db", _template(tmp_path, 200)
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

