"""The Ray engine on a real two-node cluster on 127.0.0.1: a head (``ray start --head``) and a
worker node joining it, one CPU each, so that work crosses nodes. The same bytes as one process
for ingestion, the exact ground truth and the gate.

Only the processes this test starts are stopped: each ``ray start`` runs in a session of its
own and its daemons stay in it, so teardown ends that session's processes by id (``ray stop``
would end every Ray process on the machine, other people's included)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.truth import ground_truth
from recallwatch.cli import app
from tests.scale.test_ray_engine import SPEC, contents, corpus_file

pytestmark = pytest.mark.slow
runner = CliRunner(env={"COLUMNS": "200"})
RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _session_pids(sid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    pids.append(int(entry))
            except (ProcessLookupError, PermissionError):
                pass
    return pids


def _end_session(sid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _session_pids(sid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 15
        while _session_pids(sid) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[str]:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    temp = tempfile.mkdtemp(prefix="rw-ray-", dir="/tmp")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    sessions: list[int] = []
    try:
        for args in (["--head", "--port", str(port), "--temp-dir", temp,
                      "--include-dashboard=false"], ["--address", address]):
            started = subprocess.Popen([RAY, "start", *args, *common], env=env,
                                       start_new_session=True, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
            sessions.append(started.pid)
            out, _ = started.communicate(timeout=180)
            assert started.returncode == 0, out
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
        deadline = time.monotonic() + 60
        while sum(n["Alive"] for n in ray.nodes()) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert sum(n["Alive"] for n in ray.nodes()) == 2
        assert ray.cluster_resources().get("CPU") == 2
        ray.shutdown()  # each step below connects by itself, as a user's command does
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for sid in sessions:
            _end_session(sid)
        shutil.rmtree(temp, ignore_errors=True)


def test_two_node_cluster_gives_the_single_process_bytes(two_nodes: str, tmp_path: Path) -> None:
    from recallwatch.scale.ray_engine import ground_truth as ray_truth
    from recallwatch.scale.ray_engine import ray_session

    # exact ground truth: 4 shards over the two nodes
    rng = np.random.default_rng(3)
    base = rng.integers(-2, 3, size=(3000, 16)).astype(np.float32)
    queries = rng.normal(size=(30, 16)).astype(np.float32)
    one = ground_truth(base, queries, 20, "l2")
    with ray_session(two_nodes) as ray:
        two = ray_truth(base, queries, 20, "l2", shard_rows=800, workers=2)
        assert len({n["NodeID"] for n in ray.nodes() if n["Alive"]}) == 2
    assert (two.ids.tobytes(), two.distances.tobytes()) == (one.ids.tobytes(),
                                                            one.distances.tobytes())

    # ingestion, then the gate on what was ingested
    corpus = corpus_file(tmp_path, 16)
    local = f"lancedb://{tmp_path / 'local'}?table=chunks"
    spread = f"lancedb://{tmp_path / 'ray'}?table=chunks"
    common = ["--embedder", SPEC, "--batch-size", "4", "--commit-every", "8", "--no-progress"]
    assert runner.invoke(app, ["ingest", str(corpus), "--store", local, *common]).exit_code == 0
    r = runner.invoke(app, ["ingest", str(corpus), "--store", spread, *common, "--engine", "ray",
                            "--address", two_nodes, "--workers", "2"])
    assert r.exit_code == 0, r.output
    assert contents(local) == contents(spread)

    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"name": "g", "version": "1", "queries": [
        {"id": f"q{i}", "text": " ".join(r["text"].split()[:12]), "expected": [r["id"]]}
        for i, r in enumerate(rows[:9])]}), encoding="utf-8")
    args = ["gate", str(golden), "--store", local, "--no-history", "--format", "json"]
    a = runner.invoke(app, args)
    b = runner.invoke(app, [*args, "--engine", "ray", "--address", two_nodes, "--workers", "2"])
    assert a.exit_code == b.exit_code, b.output
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    for d in (da, db):
        for key in ("run_id", "created_at", "timings"):
            d.pop(key)
    assert da == db
