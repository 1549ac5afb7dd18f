"""A run file evaluated a block of queries at a time: the same values as the whole run, bit for
bit, on every measure family; trec_eval's (pytrec_eval's) values; a file not grouped by query is
regrouped through temporary files and said so (more in test_regroup.py); refused input is located
as the whole reading locates it."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import InputError
from recallwatch.formats.trec_blocks import DEFAULT_BLOCK_BYTES
from recallwatch.metrics import EvalResult, Qrels, Run, evaluate, evaluate_file

# One measure of every family (with a cutoff where the family takes one).
EVERY_FAMILY = ["nDCG@10", "nDCG", "R@100", "Rcap@5", "RR", "RR@3", "AP", "AP@5", "P@10",
                "Success@5", "Rprec", "Bpref", "infAP", "GMAP", "NumQ", "NumRet", "NumRel",
                "NumRelRet", "IPrec@0.5", "AP11pt", "SetP", "SetR", "SetF", "Judged@10",
                "ERR@10", "ERR", "RBP(p=0.8)"]


def _write(path: Path, seed: int = 1, n: int = 200) -> tuple[Path, Path]:
    """Qrels and a run grouped by query: judged queries absent from the run, run queries without
    judgments, negative grades, tied scores (two decimals), depths from 1 to 50."""
    rng = np.random.default_rng(seed)
    qrels, run = path / "qrels.txt", path / "run.txt"
    with qrels.open("w") as q, run.open("w") as r:
        for i in range(n):
            if i % 7 != 3:
                rel = rng.choice(60, size=rng.integers(1, 8), replace=False)
                q.writelines(f"q{i} 0 d{d} {rng.integers(-1, 4)}\n" for d in rel)
            if i % 11 == 5:
                continue
            depth = int(rng.integers(1, 50))
            docs = rng.choice(80, size=depth, replace=False)
            scores = np.round(rng.random(depth), 2)
            r.writelines(f"q{i} Q0 d{d} {j} {s} tag\n"
                         for j, (d, s) in enumerate(zip(docs, scores, strict=True)))
        r.write("unjudged Q0 d1 1 1.0 tag\n")
    return qrels, run


def _same(a: EvalResult, b: EvalResult) -> None:
    assert a.query_ids == b.query_ids
    assert a.missing_from_run == b.missing_from_run and a.missing_from_run
    assert a.not_judged == b.not_judged and "unjudged" in a.not_judged
    for m in a.measures:
        assert np.array_equal(a.per_query[m], b.per_query[m]), m
        assert a.aggregate[m] == b.aggregate[m], m


@pytest.mark.parametrize("block_bytes", [1500, 20_000, 1 << 24])
def test_blocks_give_the_whole_runs_values_bit_for_bit(tmp_path: Path, block_bytes: int) -> None:
    qrels_path, run_path = _write(tmp_path)
    qrels = Qrels.from_trec(qrels_path)
    whole = evaluate(qrels, Run.from_trec(run_path, cache=False), EVERY_FAMILY)
    done = evaluate_file(qrels, run_path, EVERY_FAMILY, block_bytes=block_bytes)
    assert done.read_whole is None and done.note is None
    assert done.blocks >= (20 if block_bytes == 1500 else 1)
    _same(whole, done.result)


# recallwatch's measure name: pytrec_eval's
PYTREC_NAMES = {"nDCG@10": "ndcg_cut_10", "AP": "map", "RR": "recip_rank", "P@10": "P_10",
                "R@100": "recall_100", "Bpref": "bpref"}


def same_error_as_the_whole_reading(qrels_path: Path, run_path: Path) -> str:
    """The error evaluating the run in blocks of 500 bytes raises, checked to be the one reading
    it whole raises (which names the line)."""
    with pytest.raises(InputError) as whole:
        Run.from_trec(run_path, cache=False)
    with pytest.raises(InputError) as blocks:
        evaluate_file(Qrels.from_trec(qrels_path), run_path, ["AP"], block_bytes=500)
    assert str(blocks.value) == str(whole.value)
    return str(blocks.value)


def assert_pytrec_evals(result: EvalResult, qrels_path: Path, run_path: Path) -> None:
    """Every query's value of ``PYTREC_NAMES``' measures is pytrec_eval's on the same files."""
    with open(qrels_path) as qf, open(run_path) as rf:
        qrels, run = pytrec_eval.parse_qrel(qf), pytrec_eval.parse_run(rf)
    ref = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "map", "recip_rank", "P.10", "recall.100", "bpref"}).evaluate(run)
    assert [str(m) for m in result.measures] == list(PYTREC_NAMES)
    for m in result.measures:
        for i, qid in enumerate(result.query_ids):
            expected = ref[qid][PYTREC_NAMES[str(m)]] if qid in ref else 0.0
            assert result.per_query[m][i] == pytest.approx(expected, abs=1e-12), (m, qid)


def test_values_are_trec_evals(tmp_path: Path) -> None:
    qrels_path, run_path = _write(tmp_path, seed=2)
    done = evaluate_file(Qrels.from_trec(qrels_path), run_path, list(PYTREC_NAMES),
                         block_bytes=1500)
    assert done.blocks > 10
    assert_pytrec_evals(done.result, qrels_path, run_path)


def test_a_gzip_run_is_read_in_blocks_too(tmp_path: Path) -> None:
    qrels_path, run_path = _write(tmp_path, seed=3)
    packed = tmp_path / "run.gz"
    packed.write_bytes(gzip.compress(run_path.read_bytes()))
    qrels = Qrels.from_trec(qrels_path)
    done = evaluate_file(qrels, packed, EVERY_FAMILY, block_bytes=5000)
    assert done.read_whole is None and done.blocks > 3
    _same(evaluate(qrels, Run.from_trec(run_path, cache=False), EVERY_FAMILY), done.result)


@pytest.mark.parametrize("block_bytes", [2, 1500, 1 << 24])
def test_a_byte_order_mark_and_a_last_line_without_its_break_read_in_blocks(
        tmp_path: Path, block_bytes: int) -> None:
    """The pieces are read straight into Arrow's memory: the mark is dropped from the first only,
    a line cut by a piece's end waits for the next, the last line needs no line break."""
    qrels_path, run_path = _write(tmp_path, seed=5, n=20)
    marked = tmp_path / "marked.txt"
    marked.write_bytes(b"\xef\xbb\xbf" + run_path.read_bytes().rstrip(b"\n"))
    qrels = Qrels.from_trec(qrels_path)
    done = evaluate_file(qrels, marked, EVERY_FAMILY, block_bytes=block_bytes)
    assert done.read_whole is None
    _same(evaluate(qrels, Run.from_trec(run_path, cache=False), EVERY_FAMILY), done.result)


def test_eval_from_files_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas (a second of a cold start) for a boolean array's to_numpy or an
    array built from a Python list: the block reading uses neither."""
    qrels_path, run_path = _write(tmp_path, seed=6)
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('pandas' in sys.modules))\n"
            "from recallwatch.cli import main\n"
            f"sys.argv = ['recallwatch', 'eval', {str(qrels_path)!r}, {str(run_path)!r}, "
            "'-m', 'AP', '-m', 'nDCG@10', '--format', 'json']\n"
            "main()\n")
    assert python_output(code).splitlines()[-1] == "False"


def python_output(code: str) -> str:
    """What ``code`` prints, run by a fresh Python (a cold start: nothing imported yet), which
    must succeed."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "RECALLWATCH_CACHE": "0"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_run_not_grouped_by_query_is_regrouped_and_said_so(tmp_path: Path) -> None:
    qrels_path, run_path = _write(tmp_path, seed=4)
    lines = run_path.read_text().splitlines(keepends=True)
    moved = lines[3]  # a line of the first query, moved to the end
    run_path.write_text("".join(lines[:3] + lines[4:] + [moved]))
    qrels = Qrels.from_trec(qrels_path)
    done = evaluate_file(qrels, run_path, EVERY_FAMILY, block_bytes=5000)
    assert done.read_whole is None and done.blocks > 1 and done.temporary_files > 1
    assert done.note is not None and "not grouped by query" in done.note
    assert repr(moved.split()[0]) in done.note and "sort" in done.note
    assert f"through {done.temporary_files} temporary files" in done.note
    _same(evaluate(qrels, Run.from_trec(run_path, cache=False), EVERY_FAMILY), done.result)


@pytest.mark.parametrize("bad", ["q5 Q0 d1 1 high tag\n", "q5 Q0 d1 1\n"])
def test_a_refused_line_is_located_as_the_whole_reading_locates_it(tmp_path: Path,
                                                                    bad: str) -> None:
    qrels_path, run_path = _write(tmp_path, seed=5)
    lines = run_path.read_text().splitlines(keepends=True)
    at = len(lines) * 2 // 3
    run_path.write_text("".join([*lines[:at], bad, *lines[at:]]))
    assert f"run.txt:{at + 1}:" in same_error_as_the_whole_reading(qrels_path, run_path)


def test_a_duplicate_document_is_located_with_both_lines(tmp_path: Path) -> None:
    qrels_path, run_path = _write(tmp_path, seed=6)
    lines = run_path.read_text().splitlines(keepends=True)
    at = len(lines) // 2
    while lines[at].split()[0] != lines[at + 1].split()[0]:
        at += 1
    lines.insert(at + 1, lines[at])
    run_path.write_text("".join(lines))
    with pytest.raises(InputError) as whole:
        Run.from_trec(run_path, cache=False)
    with pytest.raises(InputError) as blocks:
        evaluate_file(Qrels.from_trec(qrels_path), run_path, ["AP"], block_bytes=500)
    assert str(blocks.value) == str(whole.value) and "duplicate" in str(blocks.value)


def test_eval_command_reads_a_small_run_not_grouped_by_query_whole(tmp_path: Path) -> None:
    """Under one block, reading the run whole costs what one block costs: nothing to say."""
    qrels_path, run_path = _write(tmp_path, seed=7, n=30)
    lines = run_path.read_text().splitlines(keepends=True)
    rotated = tmp_path / "rotated.txt"
    rotated.write_text("".join(lines[1:] + lines[:1]))
    done = evaluate_file(Qrels.from_trec(qrels_path), rotated, ["AP"])
    assert done.blocks == 0 and done.note is None and done.temporary_files == 0
    assert done.read_whole is not None and "not grouped by query" in done.read_whole
    runner = CliRunner()
    result = runner.invoke(app, ["eval", str(qrels_path), str(rotated), "-m", "AP",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    grouped = runner.invoke(app, ["eval", str(qrels_path), str(run_path), "-m", "AP",
                                  "--format", "json"])
    assert grouped.exit_code == 0 and "note" not in grouped.stderr + result.stderr
    assert grouped.stdout == result.stdout


def test_eval_command_notes_a_run_not_grouped_by_query(tmp_path: Path) -> None:
    """Over one block (the command's 16 MB of text): regrouped, and the command says so."""
    queries, depth = 7000, 100
    halves = [[f"q{i} Q0 d{j} {j + 1} {1 - j / depth:.2f} tag\n" for j in range(k, depth, 2)]
              for i in range(queries) for k in (0, 1)]
    ungrouped = tmp_path / "run.txt"  # every query's even ranks first, its odd ranks after
    ungrouped.write_text("".join(line for half in halves[::2] + halves[1::2] for line in half))
    assert ungrouped.stat().st_size > DEFAULT_BLOCK_BYTES
    grouped = tmp_path / "grouped.txt"
    grouped.write_text("".join(line for half in halves for line in half))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 d{i % depth} 1\n" for i in range(queries)))
    runner = CliRunner()
    result = runner.invoke(app, ["eval", str(qrels), str(ungrouped), "-m", "AP", "-m", "nDCG@10",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"note: {ungrouped}: the run is not grouped by query")
    assert "regrouped by query through" in result.stderr and "temporary files" in result.stderr
    same = runner.invoke(app, ["eval", str(qrels), str(grouped), "-m", "AP", "-m", "nDCG@10",
                               "--format", "json"])
    assert same.exit_code == 0 and same.stderr == "" and same.stdout == result.stdout
