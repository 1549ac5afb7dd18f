"""``recallwatch bench filtered`` and ``bench streaming`` from the command line: the documents
they print and write, and their refusals (exit 2, one plain line)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.clirun import cli


def test_filtered_prints_json_and_writes_both_files(tmp_path: Path) -> None:
    uri = f"lancedb://{tmp_path / 'db'}?table=t"
    code, out, err = cli("bench", "filtered", "--store", uri, "--synthetic", "800x8",
                         "--queries", "5", "--selectivity", "0.05,0.5", "--format", "json",
                         "--out-dir", str(tmp_path / "o"))
    assert code == 0, err
    doc = json.loads(out)
    assert [r["selectivity"] for r in doc["rows"]] == [1.0, 0.05, 0.5]
    assert [r["rows_passing"] for r in doc["rows"]] == [800, 40, 400]
    assert all(r["recall"] == 1.0 for r in doc["rows"])  # below the index threshold: exact
    assert doc["filter_strategy"].startswith("prefilter")
    assert json.loads((tmp_path / "o" / "filtered.json").read_text()) == doc
    assert "| selectivity |" in (tmp_path / "o" / "filtered.md").read_text()
    # the same store again: it holds the rows now, and is refused
    code, out, err = cli("bench", "filtered", "--store", uri, "--synthetic", "800x8")
    assert code == 2 and "already holds 800 chunks" in err and "Traceback" not in err


def test_filtered_reads_a_vector_file(tmp_path: Path) -> None:
    vectors = np.random.default_rng(1).normal(size=(300, 8)).astype(np.float32)
    np.save(tmp_path / "v.npy", vectors)
    code, out, err = cli("bench", "filtered", str(tmp_path / "v.npy"), "--store",
                         f"lancedb://{tmp_path / 'db'}?table=t", "--queries", "4")
    assert code == 0, err
    assert "296 rows × 8 dimensions, 4 queries" in out  # 4 rows held out as queries


def test_bad_selectivity_is_exit_2(tmp_path: Path) -> None:
    for bad in ("0.5,0.1", "ten"):
        code, _, err = cli("bench", "filtered", "--store", f"lancedb://{tmp_path / bad}?table=t",
                           "--selectivity", bad)
        assert code == 2 and "selectivit" in err and "Traceback" not in err


def test_streaming_prints_each_step(tmp_path: Path) -> None:
    code, out, err = cli("bench", "streaming", "--store", f"lancedb://{tmp_path / 'db'}?table=t",
                         "--synthetic", "600x8", "--queries", "4", "--initial", "0.5",
                         "--batch", "100", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [s["rows"] for s in doc["steps"]] == [300, 400, 500, 600]
    assert doc["after_stream"]["rows"] == 600
    assert all(s["recall"] == 1.0 for s in doc["steps"])
    first = doc["steps"][0]["during_insert"]  # the first load runs no query meanwhile
    assert first == {"queries": 0, "seconds": 0, "qps": None, "p50_ms": None, "p99_ms": None}
