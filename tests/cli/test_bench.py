from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from recallwatch.cli import app

SWEEP = """\
dataset:
  synthetic: {n: 1500, dim: 16, topics: 10, queries: 30, seed: 2}
k: 10
recall_at: [1, 10]
timing: {warmup: 1}
engines:
  - engine: faiss-ivf
    build: {nlist: 16}
    query: {nprobe: [1, 16]}
"""


def test_bench_prints_the_table_and_writes_outputs(tmp_path: Path) -> None:
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP, encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", str(sweep), "--out-dir", str(tmp_path / "out"),
                                      "--quiet"])
    assert result.exit_code == 0, result.output
    assert "n=1500  d=16  queries=30  metric=ip  k=10" in result.stdout
    assert "fastest at R@10 >= 0.95: faiss-ivf nlist=16 nprobe=16" in result.stdout
    assert (tmp_path / "out" / "results.json").is_file()


def test_bench_json_is_one_document(tmp_path: Path) -> None:
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP, encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", str(sweep), "--format", "json", "--quiet"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["k"] == 10 and len(doc["results"]) == 2


def test_bench_bad_sweep_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP.replace("k: 10", "k: ten"), encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", str(sweep)])
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"Error: {sweep}:1: field 'k': expected an integer in "
                                     "[1, 10000], found 'ten'")


def test_quantize_on_synthetic_vectors(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "quantize", "--synthetic", "3000x32", "--sample",
                                      "50", "--depths", "10,100", "--out-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| float16 | 64 |" in result.stdout and "R=100" in result.stdout
    assert json.loads((tmp_path / "quantization.json").read_text())["k"] == 10


def test_quantize_reads_a_vector_file(tmp_path: Path) -> None:
    import numpy as np

    from recallwatch.formats.ann import write_vectors

    path = tmp_path / "v.fvecs"
    write_vectors(path, np.random.default_rng(0).standard_normal((800, 16)))
    result = CliRunner().invoke(app, ["bench", "quantize", str(path), "--sample", "20", "--format",
                                      "json", "--depths", "50"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["n"] == 780 and doc["nq"] == 20 and doc["dataset"]["source"]["base"] == str(path)


def test_quantize_needs_exactly_one_input() -> None:
    result = CliRunner().invoke(app, ["quantize"])
    assert result.exit_code == 2
    assert "Error: give exactly one of BASE, --synthetic NxD or --store URI" in result.stderr


def test_quantize_rejects_a_malformed_synthetic_size() -> None:
    result = CliRunner().invoke(app, ["bench", "quantize", "--synthetic", "big"])
    assert result.exit_code == 2
    assert "field '--synthetic': expected NxD, e.g. 20000x128, found 'big'" in result.stderr


def test_bench_reference_writes_the_chapters_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "reference", "--out-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "fig18_7_binary_rescoring.png" in result.stdout
    assert (tmp_path / "experiments.json").is_file()
    # each file beside the size it was made at: the default collection, unchanged
    assert f"{tmp_path / 'fig18_2_recall_by_k.png'}  (n=20,000 vectors × 128 dimensions, 200 " \
        "queries, IVF nlist=128 nprobe=4)\n" in result.stdout
    assert "moved" not in result.stderr
