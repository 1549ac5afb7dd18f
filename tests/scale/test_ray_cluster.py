"""The Ray engine on a real two-node cluster on 127.0.0.1: a head (``ray start --head``) and a
worker node joining it, one CPU each, so that work crosses nodes. The same bytes as one process
for ingestion, the exact ground truth, the gate and the monitor.

Only the processes this test starts are stopped: each ``ray start`` runs in a session of its
own and its daemons stay in it, so teardown ends that session's processes by id (``ray stop``
would end every Ray process on the machine, other people's included)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
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

from recallwatch.bench.exact_knn import ground_truth
from recallwatch.cli import app
from tests.scale.test_ray_engine import SPEC, contents, corpus_file
from tests.scale.test_ray_monitor import indexed_store, report_without_timings

pytestmark = pytest.mark.slow
runner = CliRunner(env={"COLUMNS": "200"})
RAY = str(Path(sys.executable).with_name("ray"))
RECALLWATCH = str(Path(sys.executable).with_name("recallwatch"))
ROOT = Path(__file__).resolve().parents[2]


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
def two_nodes() -> Iterator[tuple[str, dict[str, str]]]:
    """The cluster's address and the environment a client of it needs."""
    pytest.importorskip("ray")
    temp = tempfile.mkdtemp(prefix="rw-ray-", dir="/tmp")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    # Ray's token authentication with a token made for this cluster alone, shared by the head,
    # the worker node and the clients through the environment. The clients are subprocesses, as
    # a user's commands are: Ray reads its authentication settings once per process.
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
           "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(ROOT)}
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
        yield address, env
    finally:
        for sid in sessions:
            _end_session(sid)
        shutil.rmtree(temp, ignore_errors=True)


_TRUTH = """
import sys, numpy as np
from recallwatch.scale.ray_engine import ground_truth, ray_session
work, address = sys.argv[1], sys.argv[2]
base, queries = np.load(work + "/base.npy"), np.load(work + "/queries.npy")
with ray_session(address) as ray:
    deadline = __import__("time").monotonic() + 60
    while sum(n["Alive"] for n in ray.nodes()) < 2 and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.5)
    print(sum(n["Alive"] for n in ray.nodes()), ray.cluster_resources().get("CPU"))
    truth = ground_truth(base, queries, 20, "l2", shard_rows=800, workers=2)
np.savez(work + "/truth.npz", ids=truth.ids, distances=truth.distances)
"""


_MONITOR = """
import json, sys, numpy as np
from datetime import datetime
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import load_probes
from recallwatch.scale.ray_engine import ray_session
from recallwatch.scale.ray_exact_knn import RayExactSearch
from recallwatch.stores import open_store
uri, probes, address, now = sys.argv[1:5]
store = open_store(uri)
with ray_session(address):
    report = run_monitor(store, load_probes(probes), k=10, floor=0.99,
                         now=datetime.fromisoformat(now),
                         exact=RayExactSearch(shard_rows=250, workers=2))
print(json.dumps(report.to_dict()))
"""


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)


def test_two_node_cluster_gives_the_single_process_bytes(
        two_nodes: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    address, env = two_nodes
    # exact ground truth: 4 shards over the two nodes
    rng = np.random.default_rng(3)
    base = rng.integers(-2, 3, size=(3000, 16)).astype(np.float32)
    queries = rng.normal(size=(30, 16)).astype(np.float32)
    np.save(tmp_path / "base.npy", base)
    np.save(tmp_path / "queries.npy", queries)
    done = _run([sys.executable, "-c", _TRUTH, str(tmp_path), address], env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[:2] == ["2", "2.0"]  # two nodes, one CPU each
    one = ground_truth(base, queries, 20, "l2")
    with np.load(tmp_path / "truth.npz") as two:
        assert two["ids"].tobytes() == one.ids.tobytes()
        assert two["distances"].tobytes() == one.distances.tobytes()

    # ingestion, then the gate on what was ingested
    corpus = corpus_file(tmp_path, 16)
    local = f"lancedb://{tmp_path / 'local'}?table=chunks"
    spread = f"lancedb://{tmp_path / 'ray'}?table=chunks"
    common = ["--embedder", SPEC, "--batch-size", "4", "--commit-every", "8", "--no-progress"]
    assert runner.invoke(app, ["ingest", str(corpus), "--store", local, *common]).exit_code == 0
    r = _run([RECALLWATCH, "ingest", str(corpus), "--store", spread, *common, "--engine", "ray",
              "--address", address, "--workers", "2"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert contents(local) == contents(spread)

    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"name": "g", "version": "1", "queries": [
        {"id": f"q{i}", "text": " ".join(r["text"].split()[:12]), "expected": [r["id"]]}
        for i, r in enumerate(rows[:9])]}), encoding="utf-8")
    args = ["gate", str(golden), "--store", local, "--no-history", "--format", "json",
            "--latency-sample", "9"]
    a = runner.invoke(app, args)
    b = _run([RECALLWATCH, *args, "--engine", "ray", "--address", address, "--workers", "2"], env)
    assert a.exit_code == b.returncode, b.stderr[-3000:]
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    for d in (da, db):
        for key in ("run_id", "created_at", "timings"):
            d.pop(key)
        cost = d.pop("cost")  # measured times differ; what is counted does not
        d["cost_counted"] = (cost["queries"], cost["index_bytes"])
    assert da == db


def test_monitor_on_the_cluster_reports_what_one_process_reports(
        two_nodes: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from recallwatch.bench.datasets import synthetic
    from recallwatch.ops.monitor import run_monitor
    from recallwatch.ops.probes import load_probes

    address, env = two_nodes
    data = synthetic(1000, 16, topics=8, queries=30, seed=4)
    store = indexed_store(tmp_path / "s", data.base)
    uri = store.uri
    np.save(tmp_path / "probes.npy", data.queries)
    now = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    one = run_monitor(store, load_probes(tmp_path / "probes.npy"), k=10, floor=0.99,
                      now=now).to_dict()
    store.close()
    assert one["recall"] < 0.99
    # the Python API, in 4 shards over the two nodes
    r = _run([sys.executable, "-c", _MONITOR, uri, str(tmp_path / "probes.npy"), address,
              now.isoformat()], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert report_without_timings(json.loads(r.stdout)) == report_without_timings(one)
    # the command, as a user runs it
    args = ["ops", "monitor", "--store", uri, "--probes", str(tmp_path / "probes.npy"), "--floor",
            "0.99", "--no-history", "--format", "json"]
    a = runner.invoke(app, args)
    b = _run([RECALLWATCH, *args, "--engine", "ray", "--address", address, "--workers", "2"], env)
    assert a.exit_code == b.returncode == 1, b.stderr[-3000:]
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    for d in (da, db):
        d.pop("index_age_seconds")  # measured from the clock at each run
    assert report_without_timings(da) == report_without_timings(db)


def test_a_bench_sweep_on_the_cluster_gives_the_single_process_results(
        two_nodes: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    """The dataset loaded by a Ray task and each build configuration a Ray task spread over the
    two nodes: the same results and frontier as one process (timings aside), and on the
    terminal recallwatch's progress only, token authentication and all."""
    from recallwatch.bench.frontier import pareto_mask
    from recallwatch.bench.sweep import load_sweep, run_sweep
    from tests.scale.test_ray_bench import PROGRESS, SWEEP, strip_timings, without_timings

    address, env = two_nodes
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(SWEEP, encoding="utf-8")
    r = _run([RECALLWATCH, "bench", str(sweep), "--engine", "ray", "--address", address,
              "--workers", "2", "--format", "json"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr and all(PROGRESS.match(line) for line in r.stderr.splitlines()), r.stderr
    one = run_sweep(load_sweep(sweep))
    spread = json.loads(r.stdout)["results"]
    assert strip_timings(spread) == json.loads(json.dumps(without_timings(one)))
    # the frontier is a function of recall and QPS alone: at one process's QPS, the cluster's
    # recalls give one process's frontier, which spans more than one point
    qps = [x.qps_single for x in one.results]
    frontier = pareto_mask([x.recall[10] for x in one.results], qps).tolist()
    assert pareto_mask([x["recall"]["10"] for x in spread], qps).tolist() == frontier
    assert sum(frontier) > 1
