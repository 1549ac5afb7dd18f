"""A reindex switches only to an index that is not worse than the live one beyond the tolerance,
and says so with the interval: on hnswlib index files (fast, deterministic), a graph rebuilt with
far weaker settings is refused however low the floor, by `ops reindex` and by the monitor's
loop; one rebuilt with the live settings switches; the floor still applies."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import UsageError
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.reindex import reindex
from recallwatch.stores import open_store
from tests.ops.test_reindex_versioned import clustered

LIVE = "m=16&ef_construction=100&ef=10"
WEAK = "m=2&ef_construction=4&ef=10"  # a graph of two links per node: most neighbours lost


PROBES = 200


def _store(tmp_path: Path) -> tuple[str, np.ndarray]:
    """An hnswlib store in production, built with the LIVE settings; its folder and 200 probes
    near stored rows. (hnswlib's build is not bit-for-bit repeatable: a rebuild with the same
    settings may lose a neighbour here and there, and 40 probes would leave one lost neighbour
    an interval reaching -0.015, past the default tolerance; 200 narrow it five-fold.)"""
    store = open_store(f"hnswlib://{tmp_path}/idx?{LIVE}", create=True)
    chunks, vectors, _ = clustered(2000)
    store.upsert(chunks, vectors)
    store.promote(store.current_version())
    store.close()
    rng = np.random.default_rng(7)
    probes = vectors[rng.choice(len(vectors), PROBES, replace=False)]
    return f"hnswlib://{tmp_path}/idx", (probes + 0.3 * rng.normal(size=probes.shape)).astype(
        np.float32)


def test_a_reindex_to_a_worse_index_is_refused(tmp_path: Path) -> None:
    uri, queries = _store(tmp_path)
    store = open_store(f"{uri}?{WEAK}")
    before = store.current_version()
    result = reindex(store, ProbeSet("p", "1", vectors=queries), floor=0.0)
    assert not result.switched and result.version == before == store.production_version()
    low, high = result.delta_ci
    assert high < -0.01 and result.probes == PROBES and result.max_recall_loss == 0.01
    assert result.delta == pytest.approx(result.recall_candidate - result.recall_before)
    assert result.reason == (
        f"recall@10 of the new index {result.recall_candidate:.3f} against the live index's "
        f"{result.recall_before:.3f}: it may be worse by more than the tolerance (new − live "
        f"recall@10 {result.delta:+.3f}, 95 % interval {low:+.3f} to {high:+.3f} over 200 "
        "probes; tolerance: a loss of at most 0.01): not switched; the current index keeps "
        "serving. Raise the tolerance (--max-recall-loss) to accept a smaller recall, e.g. for "
        "a faster index")
    # the same loss accepted on purpose: switched, and the report keeps the interval
    taken = reindex(store, ProbeSet("p", "1", vectors=queries), floor=0.0, max_recall_loss=1.0)
    assert taken.switched and "95 % interval" in taken.reason


def test_a_reindex_that_is_not_worse_switches(tmp_path: Path) -> None:
    uri, queries = _store(tmp_path)
    store = open_store(f"{uri}?{LIVE}")
    result = reindex(store, ProbeSet("p", "1", vectors=queries), floor=0.5)
    assert result.switched, result.reason
    low, high = result.delta_ci
    assert low >= -0.01
    assert result.reason == (
        f"recall@10 of the new index {result.recall_candidate:.3f} ≥ floor 0.5, and not worse "
        f"than the live index's beyond the tolerance (live {result.recall_before:.3f}; new − "
        f"live recall@10 {result.delta:+.3f}, 95 % interval {low:+.3f} to {high:+.3f} over "
        "200 probes; tolerance: a loss of at most 0.01): switched")
    assert result.to_dict()["delta_ci"] == [low, high]
    # the floor still applies to an index that is not worse
    again = reindex(store, ProbeSet("p", "1", vectors=queries), floor=1.01)
    assert not again.switched and "< floor 1.01: not switched" in again.reason


def test_cli_reindex_refuses_a_worse_index_with_exit_1(tmp_path: Path) -> None:
    uri, queries = _store(tmp_path)
    np.save(tmp_path / "p.npy", queries)
    runner = CliRunner()
    args = ["ops", "reindex", "--store", f"{uri}?{WEAK}", "--probes", str(tmp_path / "p.npy"),
            "--floor", "0", "--no-history"]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1, refused.output
    assert "it may be worse by more than the tolerance (new − live recall@10 -" in refused.stdout
    assert "not switched; the current index keeps serving" in refused.stdout
    # nothing was switched: the last figure is the time spent dropping the refused copy
    assert re.search(r"verify [0-9.]+ s, dropping the copy [0-9.]+ s$", refused.stdout.strip())
    bad = runner.invoke(app, [*args, "--max-recall-loss", "2"])
    assert bad.exit_code == 2 and "--max-recall-loss" in bad.output
    with pytest.raises(UsageError, match=r"may lose must be between 0 and 1, got -0\.1"):
        reindex(open_store(uri), ProbeSet("p", "1", vectors=queries), max_recall_loss=-0.1)


def test_the_monitors_loop_refuses_a_worse_index(tmp_path: Path) -> None:
    """The issue's case: `ops monitor --reindex-below` rebuilt, the new index was worse than
    the live one but above the floor, and it was switched. Now it is refused."""
    uri, queries = _store(tmp_path)
    store = open_store(f"{uri}?{WEAK}")
    report = run_monitor(store, ProbeSet("p", "1", vectors=queries), floor=0.1,
                         reindex_below=1.0)
    loop = report.reindex
    assert loop is not None and not loop["switched"]
    result = loop["result"]
    assert result["recall_candidate"] >= 0.1  # above the floor, and still refused
    assert "it may be worse by more than the tolerance" in result["reason"]
    assert loop["summary"].startswith("automatic reindex (recall@10 ")
    assert "not switched" in loop["summary"]
