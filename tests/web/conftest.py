"""A history full of hostile strings (six runs degrading, monitor records) and a bench
directory, shared by the in-process page tests and the browser tests; and the one way the tests
start a real server (:func:`serving`), wait for it (:func:`wait_up`) and stop it (:func:`stop`)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from recallwatch.acceptance.model import GateResult
from recallwatch.history import History
from tests.report import helpers as H

ROOT = Path(__file__).resolve().parents[2]

# Six runs of one golden set, more queries pushed out of the top-K each time: a slow decline.
DEPTHS = [0, 0, 1, 2, 3, 4]


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[GateResult]]:
    root = tmp_path_factory.mktemp("site")
    db = root / "history.db"
    runs = H.history(db, DEPTHS)
    H.monitor_records(db)
    with History(db) as h:  # an online readout whose strings are hostile (the funnel page)
        h.record_online_readout({
            "change_run": runs[-1].run_id, "promote_id": None, "offline_metric": H.hostile(1, "m"),
            "offline_baseline": runs[-2].run_id, "offline_delta": 0.01,
            "online_metric": H.hostile(2, "ctr"), "online_delta": -0.02, "online_ci_low": -0.03,
            "online_ci_high": -0.01, "online_verdict": H.hostile(3, "worse"),
            "agreement": "disagreed", "payload": {"reading": H.hostile(4, "reading ")}})
    bench = root / "bench"
    (bench / "small").mkdir(parents=True)
    (bench / "small" / "results.json").write_text(json.dumps(H.sweep()), encoding="utf-8")
    (bench / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    (bench / "broken.json").write_text("{", encoding="utf-8")
    return db, bench, runs


@contextmanager
def serving(args: list[str], ready: str, env: Mapping[str, str] | None = None
            ) -> Iterator[tuple[subprocess.Popen[str], re.Match[str]]]:
    """``recallwatch ARGS`` in a child process (a real server), once a line of its standard error
    matches ``ready`` (the line that names its address): the process and that match. Stopped
    with :func:`stop` when the block ends, if the block did not stop it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from recallwatch.cli import main; main()", *args],
        stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **(env or {})})
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(ready, line)
            if found:
                break
        else:
            raise AssertionError(f"the server did not start (exit {proc.wait()})")
        yield proc, found
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """Interrupt a server as Ctrl-C does and wait for it (killed if it lingers): its exit code
    and the rest of its standard error."""
    rest = ""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        if proc.stderr is not None and not proc.stderr.closed:
            rest = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    return proc.returncode, rest


def wait_up(url: str) -> httpx.Response:
    """The first answer of ``url``, asked again while nothing listens there yet (30 s at most)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return httpx.get(url, timeout=5)
        except httpx.ConnectError:
            assert time.monotonic() < deadline, f"nothing answered at {url}"
            time.sleep(0.1)
