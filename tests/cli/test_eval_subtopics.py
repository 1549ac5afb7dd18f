"""alpha_nDCG@k from `recallwatch eval` and `compare` with subtopic judgments: values equal to
ndeval (TREC's diversity evaluator, through pyndeval) query by query, on a generated collection
with score ties, judged queries absent from the run, queries of the run never judged and grades
from -1 to 2."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from tests.metrics.test_against_ir_measures import untied
from tests.reference import reference_library

pyndeval = reference_library("pyndeval")
runner = CliRunner()

Rows = list[tuple[str, str, str, int]]
Scores = dict[str, dict[str, float]]


def _collection(seed: int) -> tuple[Rows, Scores]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(14)] + ["D1", "z"]
    rows: Rows = []
    run: Scores = {}
    for q in range(1, 9):
        qid = str(q)
        for subtopic in range(1, rng.randint(2, 5)):
            for d in rng.sample(docs, rng.randint(1, 5)):
                rows.append((qid, str(subtopic), d, rng.choice([-1, 0, 1, 1, 2])))
        if q != 3:  # query 3 is judged, never retrieved
            ranked = rng.sample(docs, rng.randint(1, 12))
            run[qid] = {d: float(rng.choice([1, 2, 2, 3, 5])) for d in ranked}  # ties
    run["99"] = {"d1": 1.0}  # retrieved, never judged
    return rows, run


def _ndeval(rows: Rows, run: Scores, k: int, alpha: float = 0.5) -> dict[str, float]:
    """ndeval's alpha-nDCG@k of the run with its ties resolved as recallwatch (and trec_eval)
    resolves them, by document id descending: ndeval takes the ascending order instead."""
    ranked = [(q, d, s) for q, docs in untied(run).items() for d, s in docs.items()]
    name = f"alpha-nDCG@{k}"
    reference = pyndeval.ndeval(rows, ranked, measures=[name], alpha=alpha)
    judged = sorted({q for q, *_ in rows})
    return {q: reference.get(q, {}).get(name, 0.0) for q in judged}


def _write(tmp_path: Path, rows: Rows, runs: dict[str, Scores]) -> tuple[Path, list[Path]]:
    subtopics = tmp_path / "diversity.qrels"
    subtopics.write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in rows))
    paths = []
    for name, run in runs.items():
        path = tmp_path / f"{name}.run"
        path.write_text("".join(f"{q} Q0 {d} 0 {s} {name}\n" for q, docs in run.items()
                                for d, s in docs.items()))
        paths.append(path)
    return subtopics, paths


def _plain(tmp_path: Path, rows: Rows) -> Path:
    """Plain judgments from the same documents: each one's highest grade."""
    best: dict[tuple[str, str], int] = {}
    for q, _, d, g in rows:
        best[(q, d)] = max(g, best.get((q, d), g))
    path = tmp_path / "plain.qrels"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in best.items()))
    return path


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eval_equals_ndeval_with_subtopics_option(tmp_path: Path, seed: int) -> None:
    rows, run = _collection(seed)
    subtopics, (run_path,) = _write(tmp_path, rows, {"a": run})
    result = runner.invoke(app, ["eval", str(_plain(tmp_path, rows)), str(run_path),
                                 "-m", "alpha_nDCG@5", "-m", "alpha_nDCG(alpha=0.25)@10",
                                 "-m", "nDCG@10", "--subtopics", str(subtopics),
                                 "--format", "json", "--per-query"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for name, k, alpha in (("alpha_nDCG@5", 5, 0.5), ("alpha_nDCG(alpha=0.25)@10", 10, 0.25)):
        expected = _ndeval(rows, run, k, alpha)
        got = {q: values[name] for q, values in data["per_query"].items()}
        assert got == pytest.approx(expected, abs=1e-9)
        assert data["aggregate"][name] == pytest.approx(
            sum(expected.values()) / len(expected), abs=1e-9)
    assert data["queries"]["missing_from_run"] == ["3"]
    assert data["queries"]["not_judged"] == ["99"]


def test_eval_reads_qrels_as_subtopics_when_only_alpha_ndcg_is_asked(tmp_path: Path) -> None:
    rows, run = _collection(5)
    subtopics, (run_path,) = _write(tmp_path, rows, {"a": run})
    result = runner.invoke(app, ["eval", str(subtopics), str(run_path), "-m", "alpha_nDCG@20",
                                 "--format", "json", "--per-query"])
    assert result.exit_code == 0, result.output
    got = {q: v["alpha_nDCG@20"] for q, v in json.loads(result.stdout)["per_query"].items()}
    assert got == pytest.approx(_ndeval(rows, run, 20), abs=1e-9)


def test_compare_tests_alpha_ndcg_per_query(tmp_path: Path) -> None:
    rows, run_a = _collection(7)
    _, run_b = _collection(8)
    run_b.pop("99")
    subtopics, paths = _write(tmp_path, rows, {"a": run_a, "b": run_b})
    result = runner.invoke(app, ["compare", str(_plain(tmp_path, rows)), *map(str, paths),
                                 "-m", "alpha_nDCG@10", "-m", "nDCG@10", "--subtopics",
                                 str(subtopics), "--format", "json", "--resamples", "200"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["measures"]["alpha_nDCG@10"]
    a, b = _ndeval(rows, run_a, 10), _ndeval(rows, run_b, 10)
    assert row["mean_a"] == pytest.approx(sum(a.values()) / len(a), abs=1e-9)
    assert row["mean_b"] == pytest.approx(sum(b.values()) / len(b), abs=1e-9)
    assert row["wins"] == sum(b[q] > a[q] + 1e-9 for q in a)
    assert row["losses"] == sum(b[q] < a[q] - 1e-9 for q in a)
    # three runs: one table; the same means
    result = runner.invoke(app, ["compare", str(subtopics), *map(str, paths), str(paths[0]),
                                 "-m", "alpha_nDCG@10", "--format", "json", "--resamples", "200"])
    assert result.exit_code == 2  # the same run twice is refused; a copy under another name
    copy = tmp_path / "c.run"
    copy.write_bytes(paths[0].read_bytes())
    result = runner.invoke(app, ["compare", str(subtopics), *map(str, paths), str(copy),
                                 "-m", "alpha_nDCG@10", "--format", "json", "--resamples", "200"])
    assert result.exit_code == 0, result.output
    means = json.loads(result.stdout)["aggregate"]
    assert means["c.run"]["alpha_nDCG@10"] == pytest.approx(row["mean_a"], abs=1e-12)


def test_mixing_measures_without_subtopics_is_explained(tmp_path: Path) -> None:
    rows, run = _collection(3)
    _, (run_path,) = _write(tmp_path, rows, {"a": run})
    result = runner.invoke(app, ["eval", str(_plain(tmp_path, rows)), str(run_path),
                                 "-m", "alpha_nDCG@10", "-m", "nDCG@10"])
    assert result.exit_code == 2
    assert "alpha_nDCG@10 needs subtopic judgments and nDCG@10 plain ones" in result.output
    assert "--subtopics FILE" in result.output


@pytest.mark.parametrize(("content", "message"), [
    ("1 1 a\n", "diversity.qrels:1: field 'line': expected 4 fields: qid subtopic docid "
                "grade, found '3 fields'"),
    ("1 1 a x\n", "diversity.qrels:1: field 'grade': expected an integer, found 'x'"),
    ("1 1 a 1\n1 1 a 0\n", "a for subtopic 1 again (first on line 1)"),
])
def test_bad_subtopic_files_are_located(tmp_path: Path, content: str, message: str) -> None:
    _, run = _collection(0)
    subtopics, (run_path,) = _write(tmp_path, [], {"a": run})
    subtopics.write_text(content)
    result = runner.invoke(app, ["eval", str(subtopics), str(run_path), "-m", "alpha_nDCG@10"])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_ndeval_orders_ties_the_other_way() -> None:
    # why the reference is given untied scores: on a tie ndeval ranks "a" first, recallwatch "b"
    rows = [("1", "1", "a", 1), ("1", "1", "b", 0)]
    tied = {"1": {"a": 1.0, "b": 1.0}}
    direct = pyndeval.ndeval(rows, [("1", d, s) for d, s in tied["1"].items()],
                             measures=["alpha-nDCG@1"])
    assert direct["1"]["alpha-nDCG@1"] == 1.0
    assert _ndeval(rows, tied, 1) == {"1": 0.0}


def test_bad_alpha_is_explained(tmp_path: Path) -> None:
    rows, run = _collection(0)
    subtopics, (run_path,) = _write(tmp_path, rows, {"a": run})
    result = runner.invoke(app, ["eval", str(subtopics), str(run_path),
                                 "-m", "alpha_nDCG(alpha=1)@10"])
    assert result.exit_code == 2
    assert "alpha must be a number from 0 up to (not including) 1, found 1.0" in result.output
