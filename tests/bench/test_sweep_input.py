"""Hostile sweep files: every number that reaches hnswlib, faiss, usearch or numpy is checked by
the reader, so a bad one is an error line (exit 2), never a crash inside a native library."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.bench.engines import make_engine
from recallwatch.cli import app
from recallwatch.errors import UsageError

SWEEP = """\
name: tiny
dataset:
  synthetic: {n: 500, dim: 8, topics: 5, queries: 10, seed: 1}
k: 10
timing: {warmup: 2}
engines:
  - engine: hnswlib
    build: {M: 8, ef_construction: 50}
    query: {ef: [10, 20]}
"""


def _bench(tmp_path: Path, text: str) -> str:
    """The one error line of ``recallwatch bench`` on ``text``, after checking exit 2."""
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", str(path), "--quiet"])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}"), result.stderr
    return lines[0].removeprefix(f"Error: {path}")


def test_hnswlib_m_zero_is_refused_before_the_build(tmp_path: Path) -> None:
    # hnswlib segfaults on M: 0
    assert _bench(tmp_path, SWEEP.replace("M: 8", "M: 0")) == (
        ":8: record 'engines[0]': field 'build.M': expected an integer in [2, 1024], found 0")


@pytest.mark.parametrize(("engine", "build", "message"), [
    ("faiss-hnsw", "{M: 1}", "field 'build.M': expected an integer in [2, 1024], found 1"),
    ("faiss-ivfpq", "{nlist: 4, m: 4, nbits: 0}",
     "field 'build.nbits': expected an integer in [1, 16], found 0"),
    ("faiss", "{factory: 'IVF4,PQ4x0'}", "field 'build.factory': expected a factory string whose "
     "PQ bits per code is in [1, 16], found 'IVF4,PQ4x0'"),
    ("faiss", "{factory: 'HNSW0,Flat'}", "field 'build.factory': expected a factory string "
     "whose HNSW graph degree is in [2, 1024], found 'HNSW0,Flat'"),
    ("usearch", "{dtype: zz}", "field 'build.dtype': expected one of f32, f16, i8, found 'zz'"),
    ("store", "{batch: 0}", "field 'build.batch': expected an integer in [1, 1000000], found 0"),
])
def test_native_build_parameters_are_range_checked(tmp_path: Path, engine: str, build: str,
                                                   message: str) -> None:
    text = SWEEP.replace("engine: hnswlib", f"engine: {engine}").replace(
        "build: {M: 8, ef_construction: 50}", f"build: {build}").replace(
        "    query: {ef: [10, 20]}\n", "")
    assert _bench(tmp_path, text) == f":8: record 'engines[0]': {message}"


def test_a_query_grid_value_is_checked(tmp_path: Path) -> None:
    assert _bench(tmp_path, SWEEP.replace("ef: [10, 20]", "ef: [10, 0]")) == (
        ":9: record 'engines[0]': field 'query.ef': expected an integer in [1, 100000], found 0")


def test_faiss_factory_query_values_are_checked(tmp_path: Path) -> None:
    text = SWEEP.replace("engine: hnswlib", "engine: faiss").replace(
        "build: {M: 8, ef_construction: 50}", "build: {factory: 'IVF4,Flat'}").replace(
        "ef: [10, 20]", "nprobe: [1, 0]")
    assert _bench(tmp_path, text) == (":9: record 'engines[0]': field 'query.nprobe': expected a "
                                      "number in [1, 1000000], found 0")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("warmup: 2", "warmup: -5", ":5: field 'timing.warmup': expected an integer in [0, 100000], "
     "found -5"),
    ("warmup: 2", "warmup: abc", ":5: field 'timing.warmup': expected an integer in [0, 100000], "
     "found 'abc'"),
    ("seed: 1", "seed: abc", ":3: field 'dataset.synthetic.seed': expected an integer in "
     "[0, 4294967295], found 'abc'"),
    ("seed: 1", "seed: -1", ":3: field 'dataset.synthetic.seed': expected an integer in "
     "[0, 4294967295], found -1"),
    ("M: 8", "M: 8, seed: 1.5", ":8: record 'engines[0]': field 'build.seed': expected an "
     "integer in [0, 4294967295], found 1.5"),
    ("n: 500", "n: 100000000000", ":3: field 'dataset.synthetic.n': expected an integer in "
     "[1, 10000000], found 100000000000"),
    ("n: 500, dim: 8", "n: 10000000, dim: 60", ":3: field 'dataset.synthetic': expected "
     "(n + queries) × dim at most 500,000,000, found 600000600"),
    ("k: 10", "k: 3000000000", ":1: field 'k': expected an integer in [1, 10000], found "
     "3000000000"),
    ("timing: {warmup: 2}", "load: {seconds: .nan}", ":5: field 'load.seconds': expected a "
     "number in [0.1, 120], found nan"),
])
def test_sweep_settings_are_type_and_range_checked(tmp_path: Path, old: str, new: str,
                                                   message: str) -> None:
    assert _bench(tmp_path, SWEEP.replace(old, new)) == message


def test_a_grid_too_large_to_run_is_refused(tmp_path: Path) -> None:
    many = list(range(1, 201))
    text = SWEEP.replace("build: {M: 8, ef_construction: 50}",
                         f"build: {{M: {many[1:101]}, ef_construction: {many}}}")
    assert _bench(tmp_path, text) == (":8: field 'engines[0].build': expected at most 10,000 "
                                      "combinations, found 20000")


def test_an_alias_bomb_under_dataset_is_refused_at_once(tmp_path: Path) -> None:
    bomb = ['  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    bomb += [f"  {c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    text = SWEEP.replace("dataset:\n", "dataset:\n" + "\n".join(bomb) + "\n")
    start = time.perf_counter()
    assert _bench(tmp_path, text) == (":4: invalid YAML (aliases (*name) are not accepted: write "
                                      "the value out in full)")
    assert time.perf_counter() - start < 5


def test_make_engine_checks_ranges_too() -> None:
    with pytest.raises(UsageError, match=r"^engine 'hnswlib': build parameter 'M' expects an "
                                         r"integer in \[2, 1024\], found 0$"):
        make_engine("hnswlib", M=0)
    with pytest.raises(UsageError, match=r"build parameter 'M' expects an integer in "
                                         r"\[2, 1024\], found None$"):
        make_engine("hnswlib", M=None)
