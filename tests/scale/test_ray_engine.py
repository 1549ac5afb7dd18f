"""The Ray engine gives the single-process bytes: exact ground truth (ties included), ingestion
(store contents, idempotence, resumption after an interruption) and the gate (run hash and every
per-query value). One local Ray (2 CPUs) serves the module; the resumption test and the two-node
cluster (test_ray_cluster.py) are slow."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.exact_knn import ground_truth
from recallwatch.bench.output import answers, sweep_to_dict
from recallwatch.bench.sweep import SweepConfig, load_sweep, run_sweep
from recallwatch.cli import app
from recallwatch.embedders import embedder_from_spec
from recallwatch.errors import InputError, StoreError, UsageError
from recallwatch.ops.ingest import ingest
from recallwatch.stores import open_store
from recallwatch.stores.base import SupportsVectors
from tests.scale.test_ray_bench import SWEEP, on_ray, sweep_file, without_timings

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner(env={"COLUMNS": "200"})
# a small batch so that the batches, the commit groups and the query shares all cut somewhere
SPEC = "use-multilingual?batch_size=4"


def corpus_file(tmp: Path, n: int) -> Path:
    lines = (ROOT / "examples" / "kb" / "corpus_v1.jsonl").read_text(encoding="utf-8")
    out = tmp / "corpus.jsonl"
    out.write_text("\n".join(lines.splitlines()[:n]) + "\n", encoding="utf-8")
    return out


def contents(uri: str) -> tuple[list[tuple[str, str, str]], bytes]:
    store = open_store(uri)
    try:
        chunks = sorted(store.chunks(), key=lambda c: c.id)
        assert isinstance(store, SupportsVectors)
        vectors = store.vectors([c.id for c in chunks])
        return [(c.id, c.text, c.content_hash) for c in chunks], vectors.tobytes()
    finally:
        store.close()


def ingested_in_one_process(tmp: Path, n: int, commit_every: int) -> tuple[Path, str]:
    """A corpus of ``n`` chunks and the store one process ingests it into (batches of 4, commit
    groups of ``commit_every``), to compare a Ray ingestion with."""
    corpus = corpus_file(tmp, n)
    local = f"lancedb://{tmp / 'local'}?table=chunks"
    store = open_store(local, create=True)
    ingest(corpus, store, embedder_from_spec(SPEC), batch_size=4, commit_every=commit_every,
           embedder_spec=SPEC)
    store.close()
    return corpus, local


# -- exact ground truth ------------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
def test_sharded_ground_truth_is_byte_identical_ties_included(
        local_ray: ModuleType, metric: Any) -> None:
    from recallwatch.scale.ray_engine import ground_truth as ray_truth

    rng = np.random.default_rng(7)
    # small integers: many exactly equal scores, so the k-th place is often a tie
    ties = rng.integers(-2, 3, size=(2500, 8)).astype(np.float32)
    floats = rng.normal(size=(2500, 8)).astype(np.float32)
    for base in (ties, floats):
        queries = rng.integers(-2, 3, size=(45, 8)).astype(np.float32)
        for k in (1, 10, 50):
            one = ground_truth(base, queries, k, metric, block=16)
            # shards of 700 rows (4 shards, the last short), 2 workers
            many = ray_truth(base, queries, k, metric, block=16, shard_rows=700, workers=2)
            assert many.ids.tobytes() == one.ids.tobytes()
            assert many.distances.tobytes() == one.distances.tobytes()
    # the tie rule itself, against a brute force over every score: (score, id) order
    if metric == "ip":
        q = rng.integers(-2, 3, size=(5, 8)).astype(np.float32)
        truth = ground_truth(ties, q, 10, "ip")
        scores = q @ ties.T
        for r in range(len(q)):
            expected = np.lexsort((np.arange(len(ties)), -scores[r]))[:10]
            assert truth.ids[r].tolist() == expected.tolist()


# -- ingestion, then the gate on what was ingested ---------------------------------------------

def test_ray_ingest_and_gate_give_the_single_process_bytes(local_ray: ModuleType,
                                                           tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, 20)
    local = f"lancedb://{tmp_path / 'local'}?table=chunks"
    on_ray = f"lancedb://{tmp_path / 'ray'}?table=chunks"
    common = ["--embedder", SPEC, "--batch-size", "4", "--commit-every", "10", "--no-progress",
              "--format", "json"]
    a = runner.invoke(app, ["ingest", str(corpus), "--store", local, *common])
    assert a.exit_code == 0, a.output
    b = runner.invoke(app, ["ingest", str(corpus), "--store", on_ray, *common,
                            "--engine", "ray", "--workers", "2"])
    assert b.exit_code == 0, b.output
    ra, rb = json.loads(a.stdout), json.loads(b.stdout)
    assert ra["counts"] == rb["counts"] and rb["counts"]["added"] == 20
    assert ra["embedder"] == rb["embedder"]
    assert contents(local) == contents(on_ray)  # ids, texts, hashes and vector bytes
    again = runner.invoke(app, ["ingest", str(corpus), "--store", on_ray, *common,
                                "--engine", "ray"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["counts"]["unchanged"] == 20  # nothing re-embedded

    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    golden = tmp_path / "golden.json"
    # 10 queries: three embedding batches of 4, so the two workers get 8 and 2
    golden.write_text(json.dumps({"name": "g", "version": "1", "queries": [
        {"id": f"q{i}", "text": " ".join(r["text"].split()[:12]), "expected": [r["id"]]}
        for i, r in enumerate(rows[::2][:10])]}), encoding="utf-8")
    args = ["gate", str(golden), "--store", local, "--no-history", "--format", "json",
            "--latency-sample", "10"]
    one = runner.invoke(app, args)
    many = runner.invoke(app, [*args, "--engine", "ray", "--workers", "2"])
    assert one.exit_code == many.exit_code and one.exit_code in (0, 1), many.output
    ga, gb = json.loads(one.stdout), json.loads(many.stdout)
    # what it cost is measured, not computed: every query timed on both paths (asked for: the
    # default sample follows the time the run took), the index the same
    ca, cb = ga.pop("cost"), gb.pop("cost")
    assert (ca["queries"], ca["index_bytes"]) == (cb["queries"], cb["index_bytes"]) == (10, 0)
    for d in (ga, gb):
        for key in ("run_id", "created_at", "timings"):
            d.pop(key)
    assert ga["config_hash"] == gb["config_hash"]
    assert ga["queries"] == gb["queries"]  # every per-query value, ranks and scores included
    assert ga == gb


@pytest.mark.slow
def test_an_interrupted_ray_ingest_resumes_to_the_same_store(local_ray: ModuleType,
                                                             tmp_path: Path) -> None:
    from recallwatch.scale.ray_engine import RayEmbedding

    corpus, local = ingested_in_one_process(tmp_path, 20, commit_every=8)
    embedder = embedder_from_spec(SPEC)

    class Interrupted(Exception):
        pass

    def stops_after_three(batches: Iterable[list[str]]) -> Iterator[np.ndarray]:
        for n, vectors in enumerate(RayEmbedding(SPEC, workers=2)(batches)):
            if n == 3:  # mid-way through the second commit group (8 chunks = 2 batches)
                raise Interrupted
            yield vectors

    uri = f"lancedb://{tmp_path / 'ray'}?table=chunks"
    store = open_store(uri, create=True)
    with pytest.raises(Interrupted):
        ingest(corpus, store, embedder, batch_size=4, commit_every=8, embedder_spec=SPEC,
               embed_batches=stops_after_three)
    assert store.count() == 8  # the first whole group only
    report = ingest(corpus, store, embedder, batch_size=4, commit_every=8, embedder_spec=SPEC,
                    embed_batches=RayEmbedding(SPEC, workers=2))
    store.close()
    assert report.resumed and len(report.added) == 12 and report.unchanged == 8
    assert contents(local) == contents(uri)


# -- without Ray, and Ray-only options without Ray ---------------------------------------------

def test_without_ray_the_ray_engine_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: import ray fails
    corpus = corpus_file(tmp_path, 2)
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    r = runner.invoke(app, ["ingest", str(corpus), "--store", store, "--engine", "ray"])
    assert r.exit_code == 2
    assert "pip install 'recallwatch[ray]'" in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "kb").exists()  # nothing written


def test_ray_options_need_the_ray_engine(tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, 2)
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    r = runner.invoke(app, ["ingest", str(corpus), "--store", store, "--workers", "2"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "Error: --address and --workers only apply with --engine ray"


def test_an_address_nobody_listens_on_is_refused_in_seconds(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    corpus = corpus_file(tmp_path, 2)
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    # (the message is recallwatch's own check, made before Ray's minutes of retries)
    r = runner.invoke(app, ["ingest", str(corpus), "--store", store, "--engine", "ray",
                            "--address", f"127.0.0.1:{port}"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"Error: cannot reach the Ray cluster at 127.0.0.1:{port}: nothing "
                           "accepted a connection within 5 s")
    assert "check --address" in line
    assert not (tmp_path / "kb").exists()  # nothing written
    bad = runner.invoke(app, ["ingest", str(corpus), "--store", store, "--engine", "ray",
                              "--address", "head-node"])
    assert bad.exit_code == 2
    assert "--address must be HOST:PORT of the Ray head node (or auto), found 'head-node'" \
        in bad.stderr


@pytest.mark.parametrize("says", [b"", b"SSH-2.0-OpenSSH_9.2\r\n"], ids=["silent", "other"])
def test_an_address_that_accepts_but_is_not_ray_fails_in_bounded_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, says: bytes) -> None:
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    held: list[socket.socket] = []

    def serve() -> None:  # accept, say `says` (or nothing) and keep the connection open
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if says:
                conn.sendall(says)

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.setenv("RECALLWATCH_RAY_TIMEOUT", "2")
    corpus = corpus_file(tmp_path, 2)
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    started = time.monotonic()
    try:
        r = runner.invoke(app, ["ingest", str(corpus), "--store", store, "--engine", "ray",
                                "--address", f"127.0.0.1:{port}"])
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert time.monotonic() - started < 120  # bounded (Ray alone retried for 823 s)
    assert r.exit_code == 2 and "Traceback" not in r.output
    [line] = r.stderr.strip().splitlines()  # one line: no log line of Ray's
    what = "answered something else" if says else "said nothing"
    assert line == (f"Error: cannot reach the Ray cluster at 127.0.0.1:{port}: something accepted "
                    f"the connection but {what} within 2 s, where a Ray head node answers at "
                    "once; check --address: HOST:PORT of the head node (`ray start --head` "
                    "prints it), or auto; RECALLWATCH_RAY_TIMEOUT=SECONDS waits longer")
    assert not (tmp_path / "kb").exists()


@pytest.mark.slow
def test_a_successful_ray_session_prints_nothing_of_ray(tmp_path: Path) -> None:
    """Starting a local Ray, running actors and stopping it: Ray's own notes (its token
    authentication default) do not reach the user's terminal."""
    import subprocess

    script = tmp_path / "run.py"
    script.write_text(
        "from recallwatch.scale.ray_engine import ray_session\n"
        "with ray_session(None, 2) as ray:\n"
        "    class A:\n"
        "        def f(self, x):\n"
        "            return x + 1\n"
        "    actors = [ray.remote(num_cpus=1)(A).remote() for _ in range(2)]\n"
        "    print(ray.get([a.f.remote(1) for a in actors]))\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env={"PYTHONPATH": str(ROOT),
                                                         "PATH": "/usr/bin:/bin"}, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == "[2, 2]\n"
    assert out.stderr == ""


# -- bench: each build configuration a Ray task ------------------------------------------------

def test_a_sweep_on_ray_gives_the_single_process_results_and_frontier(
        local_ray: ModuleType, tmp_path: Path) -> None:
    config = load_sweep(sweep_file(tmp_path))
    one = run_sweep(config)
    seen: list[str] = []
    spread = on_ray(config, on_result=lambda r: seen.append(f"{r.label} {r.params}"))
    # every configuration, in the sweep's order, reported as it arrived
    assert seen == [f"{r.label} {r.params}" for r in one.results]
    assert len(one.results) == 1 + 2 * 3 + 2 + 2
    assert without_timings(spread) == without_timings(one)  # recalls, index bytes, parameters
    assert spread.dataset == one.dataset and spread.config_hash == one.config_hash
    # the recalls are not trivial: the grid spans low to full recall
    assert min(r.recall[10] for r in one.results) < 0.6
    assert max(r.recall[10] for r in one.results) == 1.0
    # the frontier and the chosen points are a function of recall and QPS alone: with the same
    # QPS, the Ray results choose the same points as one process
    timed = replace(spread, results=[replace(r, qps_single=o.qps_single,
                                             cpu_s_per_1000_single=o.cpu_s_per_1000_single,
                                             timing=o.timing)
                                     for r, o in zip(spread.results, one.results, strict=True)])
    assert answers(timed) == answers(one)
    # and the Ray run's own frontier is drawn from its own timings, in the same document
    doc = sweep_to_dict(spread)
    assert doc["answers"]["frontier"] == answers(spread).frontier


def test_a_point_needing_more_cpus_than_any_node_has_is_refused(local_ray: ModuleType,
                                                                tmp_path: Path) -> None:
    config = replace(load_sweep(sweep_file(tmp_path)), threads=64)
    with pytest.raises(UsageError, match=r"threads \(64\) exceed the CPUs of every node of "
                       r"the Ray cluster \(at most 2 on one node\): give --threads 2 or fewer"):
        on_ray(config)


def test_a_recallwatch_error_in_a_task_reaches_the_user_as_it_is(local_ray: ModuleType,
                                                                 tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    text = SWEEP.split("engines:")[0] + (
        f"engines:\n  - engine: store\n    build: {{uri: 'lancedb://{missing}?table=t', "
        "populate: false}\n")
    _same_error_as_one_process(load_sweep(sweep_file(tmp_path, text)), StoreError)


def _same_error_as_one_process(config: SweepConfig, kind: type[Exception]) -> None:
    """``config`` fails on Ray with one process's error, unwrapped (no Ray report, no
    traceback)."""
    with pytest.raises(kind) as local:
        run_sweep(config)
    with pytest.raises(kind) as remote:
        on_ray(config)
    assert str(remote.value) == str(local.value)
    assert "Traceback" not in str(remote.value) and "RayTaskError" not in str(remote.value)


# -- bench: the driver holds references, not vectors -------------------------------------------

def test_the_vectors_are_loaded_by_a_worker_and_stay_in_the_object_store(
        local_ray: ModuleType, tmp_path: Path) -> None:
    from recallwatch.bench.exact_knn import prepare
    from recallwatch.bench.sweep import dataset_info, load_dataset
    from recallwatch.scale.ray_bench import load_on_ray, truth_on_ray

    config = load_sweep(sweep_file(tmp_path))
    loaded = load_on_ray(config)
    # another process read and prepared the data; this one was handed references only
    assert loaded.loaded_by != os.getpid()
    refs = (loaded.base, loaded.raw_queries, loaded.queries, loaded.ids)
    assert all(isinstance(r, local_ray.ObjectRef) for r in refs)
    # what the references point to is what one process would have prepared
    data = load_dataset(config)
    assert loaded.dataset == dataset_info(data)
    assert local_ray.get(loaded.base).tobytes() == prepare(data.base, data.metric).tobytes()
    assert local_ray.get(loaded.queries).tobytes() == \
        prepare(data.queries, data.metric).tobytes()
    assert local_ray.get(loaded.raw_queries).tobytes() == data.queries.tobytes()
    assert local_ray.get(loaded.ids) is None
    assert loaded.depths == [1, 10, 50] and loaded.truth_key == ""
    # the exact truth from 5 shards of the stored base: one process's bytes
    found = truth_on_ray(loaded, shard_rows=700, workers=2)
    truth = ground_truth(data.base, data.queries, 50, data.metric)
    assert found.ids.tobytes() == truth.ids.tobytes()
    assert found.distances.tobytes() == truth.distances.tobytes()


def _vector_sweep(tmp: Path, metric: str) -> Path:
    """A sweep of a base file named relative to its own folder, queries held out of it, and a
    truth cache, in tmp/sub."""
    sub = tmp / "sub"
    sub.mkdir()
    rng = np.random.default_rng(11)
    np.save(sub / "vecs.npy", rng.normal(size=(2400, 16)).astype(np.float32))
    text = SWEEP.split("dataset:")[0] + (
        f"dataset: {{base: vecs.npy, metric: {metric}, queries: {{sample: 40, seed: 2}}}}\n"
        "cache: truth-cache\n" + "k: 10" + SWEEP.split("k: 10", 1)[1])
    return sweep_file(sub, text)


@pytest.mark.parametrize("metric", ["cosine", "l2"])
def test_a_file_dataset_named_relative_to_the_command_gives_the_single_process_results(
        local_ray: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        metric: str) -> None:
    """The loading task reads relative paths from the command's folder (the Ray workers run
    elsewhere) and computes the truth's cache key as one process does."""
    _vector_sweep(tmp_path, metric)
    monkeypatch.chdir(tmp_path)
    config = load_sweep("sub/sweep.yaml")
    spread = on_ray(config)  # computes the truth and writes the cache
    cached = sorted((tmp_path / "sub" / "truth-cache").iterdir())
    assert len(cached) == 1
    one = run_sweep(config)  # finds the cache the Ray run wrote: the same key
    assert sorted((tmp_path / "sub" / "truth-cache").iterdir()) == cached
    assert without_timings(spread) == without_timings(one)
    assert spread.dataset == one.dataset
    cached[0].unlink()  # and without the cache, one process computes the same truth
    assert without_timings(run_sweep(config)) == without_timings(one)


def test_a_dataset_error_in_the_loading_task_reaches_the_user_as_it_is(
        local_ray: ModuleType, tmp_path: Path) -> None:
    text = SWEEP.split("dataset:")[0] + (
        f"dataset: {{base: {tmp_path / 'missing.npy'}}}\n" + "k: 10" +
        SWEEP.split("k: 10", 1)[1])
    _same_error_as_one_process(load_sweep(sweep_file(tmp_path, text)), InputError)


def test_a_store_dataset_named_relative_to_the_command_gives_the_single_process_results(
        local_ray: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's own vectors, exported by the loading task, with the names of the base rows
    (which the ``store`` engine searches by) kept in the object store; the store is named by a
    path relative to the command's folder, in the dataset and in the engine."""
    from tests.bench.test_store_dataset import _store, _sweep, exact_and_flat

    _store(tmp_path / "kb", 1500)
    monkeypatch.chdir(tmp_path)
    uri = "lancedb://kb?table=t"
    config = load_sweep(_sweep(tmp_path, uri, exact_and_flat(uri)))
    one = run_sweep(config)
    spread = on_ray(config)
    assert without_timings(spread) == without_timings(one)
    assert spread.dataset == one.dataset and spread.dataset["n"] == 1500 - 60
    assert [r.recall for r in spread.results] == [{1: 1.0, 10: 1.0}] * 2
