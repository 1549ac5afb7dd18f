"""Runs the text blocks could not hold: a Parquet or Arrow run read in blocks of whole queries,
and a run not grouped by query (a real run's lines shuffled) regrouped through temporary files;
each equal bit for bit to the whole reading, and to pytrec_eval; the temporary files gone
afterwards, also after an error; refused input located as the whole reading locates it."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import InputError
from recallwatch.metrics import EvalResult, Qrels, Run, evaluate, evaluate_file
from recallwatch.metrics._regroup import Scattered, regrouped
from tests.metrics.test_streamed import (
    EVERY_FAMILY,
    PYTREC_NAMES,
    _same,
    _write,
    assert_pytrec_evals,
    same_error_as_the_whole_reading,
)
from tests.stats.test_cranfield import cranfield  # noqa: F401  (the fixture: a real BM25 run)


def _identical(a: EvalResult, b: EvalResult) -> None:
    assert a.query_ids == b.query_ids
    assert a.missing_from_run == b.missing_from_run and a.not_judged == b.not_judged
    for m in a.measures:
        assert a.per_query[m].dtype == b.per_query[m].dtype, m
        assert np.array_equal(a.per_query[m], b.per_query[m]), m
        assert a.aggregate[m] == b.aggregate[m], m


def _table(run: Run) -> pa.Table:
    return pa.table({"qid": run.query_ids, "docid": run.doc_ids, "score": run.scores})


def _write_columnar(table: pa.Table, path: Path) -> None:
    """Several row groups (Parquet) or record batches (an Arrow file; ``.ipc``: an Arrow
    stream) of 700 rows."""
    if path.suffix == ".parquet":
        pq.write_table(table, path, row_group_size=700)
        return
    new = pa.ipc.new_stream if path.suffix == ".ipc" else pa.ipc.new_file
    with pa.OSFile(str(path), "wb") as sink, new(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=700):
            writer.write_batch(batch)


def _shuffled(path: Path, out: Path, seed: int) -> None:
    """The run at ``path`` with its lines (rows) in a random order, written as ``out``'s suffix
    says: TREC text, gzip, Parquet or Arrow."""
    rng = np.random.default_rng(seed)
    if out.suffix in (".parquet", ".arrow", ".ipc"):
        table = _table(Run.from_trec(path, cache=False))
        _write_columnar(table.take(pa.array(rng.permutation(len(table)))), out)
        return
    lines = path.read_text().splitlines(keepends=True)
    text = "".join(lines[i] for i in rng.permutation(len(lines))).encode()
    out.write_bytes(gzip.compress(text) if out.suffix == ".gz" else text)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".ipc"])
@pytest.mark.parametrize("block_bytes", [1500, 20_000, 1 << 24])
def test_columnar_runs_are_read_in_blocks_bit_for_bit(tmp_path: Path, suffix: str,
                                                      block_bytes: int) -> None:
    qrels_path, run_path = _write(tmp_path, seed=8)
    path = tmp_path / f"run{suffix}"
    _write_columnar(_table(Run.from_trec(run_path, cache=False)), path)
    qrels = Qrels.from_trec(qrels_path)
    done = evaluate_file(qrels, path, EVERY_FAMILY, block_bytes=block_bytes)
    assert done.read_whole is None and done.note is None and done.temporary_files == 0
    assert done.blocks >= (50 if block_bytes == 1500 else 1)
    _same(evaluate(qrels, Run.read(path), EVERY_FAMILY), done.result)


@pytest.mark.parametrize("name", ["run.txt", "run.gz", "run.parquet", "run.arrow", "run.ipc"])
def test_a_shuffled_real_run_is_regrouped_bit_for_bit(tmp_path: Path, cranfield: Path,  # noqa: F811
                                                      name: str) -> None:
    qrels = Qrels.from_trec(cranfield / "qrels")
    path = tmp_path / name
    _shuffled(cranfield / "full", path, seed=11)
    done = evaluate_file(qrels, path, EVERY_FAMILY, block_bytes=20_000)
    assert done.read_whole is None and done.note is not None
    assert "not grouped by query" in done.note and "temporary files" in done.note
    assert done.temporary_files > 5 and done.blocks > 5
    _identical(evaluate(qrels, Run.read(path, cache=False), EVERY_FAMILY), done.result)
    # the order of a query's lines does not matter: the run as written, grouped, gives the same
    _identical(evaluate(qrels, Run.from_trec(cranfield / "full", cache=False), EVERY_FAMILY),
               done.result)


def test_a_regrouped_run_has_pytrec_evals_values(tmp_path: Path, cranfield: Path  # noqa: F811
                                                 ) -> None:
    path = tmp_path / "run.txt"
    _shuffled(cranfield / "full", path, seed=12)
    done = evaluate_file(Qrels.from_trec(cranfield / "qrels"), path, list(PYTREC_NAMES),
                         block_bytes=20_000)
    assert done.temporary_files > 5
    assert_pytrec_evals(done.result, cranfield / "qrels", path)


def _shuffled_with_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, seed: int,
                          shuffle: int) -> tuple[Path, Path, Path]:
    """(qrels, a shuffled text run, TMPDIR): a seeded run's lines shuffled, and an empty
    temporary directory that TMPDIR names."""
    qrels_path, run_path = _write(tmp_path, seed=seed)
    shuffled = tmp_path / "shuffled.txt"
    _shuffled(run_path, shuffled, seed=shuffle)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    return qrels_path, shuffled, tmpdir


def test_the_temporary_files_are_under_tmpdir_and_removed(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, shuffled, tmpdir = _shuffled_with_tmpdir(tmp_path, monkeypatch, seed=9, shuffle=1)
    with regrouped(shuffled, 2000) as parts:
        assert len(parts.files) > 5 and all(f.exists() for f in parts.files)
        assert {f.parent.parent for f in parts.files} == {tmpdir}
        assert sum(parts.rows) == len(Run.from_trec(shuffled, cache=False))
    assert not any(f.exists() for f in parts.files) and not list(tmpdir.iterdir())


def _ungrouped_with(tmp_path: Path, extra: str | None, seed: int) -> tuple[Path, Path, int]:
    """A run whose first line is moved a third of the way down (not grouped by query, found
    early), with ``extra`` (None: a copy of its second line, a duplicate document) inserted two
    thirds of the way down; the line number of the inserted line."""
    qrels_path, run_path = _write(tmp_path, seed=seed)
    lines = run_path.read_text().splitlines(keepends=True)
    third = len(lines) // 3
    lines = lines[1:third] + lines[:1] + lines[third:]
    at = 2 * len(lines) // 3
    lines.insert(at, lines[1] if extra is None else extra)
    run_path.write_text("".join(lines))
    return qrels_path, run_path, at + 1


@pytest.mark.parametrize("extra", [None, "q5 Q0 d1 1 high tag\n"])
def test_an_error_after_the_regrouping_began_is_located_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str | None) -> None:
    """A duplicate document is met in the second pass (its two lines in one temporary file), a
    refused line in the first: either way the temporary files are removed and the whole
    reading names the line, in the library and through the command (exit 2)."""
    qrels_path, run_path, line = _ungrouped_with(tmp_path, extra, seed=10)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    assert f"run.txt:{line}:" in same_error_as_the_whole_reading(qrels_path, run_path)
    assert not list(tmpdir.iterdir())
    result = CliRunner().invoke(app, ["eval", str(qrels_path), str(run_path), "-m", "AP"])
    assert result.exit_code == 2
    assert f"run.txt:{line}:" in result.stderr and "Traceback" not in result.output
    assert not list(tmpdir.iterdir())


def test_ctrl_c_in_the_second_pass_leaves_no_file(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    qrels_path, shuffled, tmpdir = _shuffled_with_tmpdir(tmp_path, monkeypatch, seed=11,
                                                         shuffle=2)
    read = Scattered.read
    calls: list[int] = []

    def interrupted(self: Scattered, numbers: list[int]) -> object:
        calls.append(len(numbers))
        if len(calls) == 3:  # as if the user pressed Ctrl-C while the third block was read
            raise KeyboardInterrupt
        return read(self, numbers)

    monkeypatch.setattr(Scattered, "read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        evaluate_file(Qrels.from_trec(qrels_path), shuffled, ["AP"], block_bytes=1000)
    assert len(calls) == 3 and not list(tmpdir.iterdir())


@pytest.mark.parametrize("bad", ["nan", "duplicate"])
def test_a_columnar_run_with_a_bad_row_says_what_the_whole_reading_says(
        tmp_path: Path, bad: str) -> None:
    qrels_path, run_path = _write(tmp_path, seed=12)
    table = _table(Run.from_trec(run_path, cache=False))
    at = len(table) * 2 // 3
    if bad == "nan":
        scores = table.column("score").to_numpy().copy()
        scores[at] = np.nan
        table = table.set_column(2, "score", pa.array(scores))
    else:  # the row before, again: a document listed twice for its query
        table = pa.concat_tables([table.slice(0, at), table.slice(at - 1)])
    path = tmp_path / "run.parquet"
    _write_columnar(table, path)
    with pytest.raises(InputError) as whole:
        Run.read(path)
    with pytest.raises(InputError) as blocks:
        evaluate_file(Qrels.from_trec(qrels_path), path, ["AP"], block_bytes=1000)
    assert str(blocks.value) == str(whole.value) and "run.parquet" in str(blocks.value)


def test_without_a_usable_temporary_directory_the_run_is_read_whole_and_said_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    qrels_path, run_path = _write(tmp_path, seed=13)
    shuffled = tmp_path / "shuffled.txt"
    _shuffled(run_path, shuffled, seed=3)
    missing = tmp_path / "no-such-dir"
    monkeypatch.setenv("TMPDIR", str(missing))
    qrels = Qrels.from_trec(qrels_path)
    done = evaluate_file(qrels, shuffled, EVERY_FAMILY, block_bytes=2000)
    assert done.blocks == 0 and done.temporary_files == 0
    assert done.read_whole is not None and str(missing) in done.read_whole
    assert done.note is not None
    assert done.note.startswith(f"{shuffled}: the run is not grouped by query")
    assert "could not be written" in done.note and "read whole" in done.note
    _same(evaluate(qrels, Run.from_trec(shuffled, cache=False), EVERY_FAMILY), done.result)
    assert not missing.exists()
