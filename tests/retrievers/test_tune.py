"""Fusion weights chosen by grid search on the tune queries, the test queries judged with them."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from recallwatch.errors import UsageError
from recallwatch.retrievers.tune import tune_weights, weight_grid
from tests.clirun import cli

RETRIEVERS = """
ANSWERS = {answers!r}


def good(query, k):
    # finds each query's answer first, then the other chunks
    return [(c, 1.0 - i / 10) for i, c in enumerate([ANSWERS[query]] + [
        x for x in sorted(set(ANSWERS.values())) if x != ANSWERS[query]])][:k]


def bad(query, k):
    # chunks that answer nothing, whatever the query
    return [(f"noise{{i}}", 1.0 - i / 10) for i in range(k)]
"""


@pytest.mark.parametrize(("n", "step"), [(2, 0.1), (3, 0.1), (3, 0.25), (4, 0.5)])
def test_the_grid_holds_every_weighting_summing_to_one(n: int, step: float) -> None:
    names = [f"r{i}" for i in range(n)]
    grid = list(weight_grid(names, step))
    units = round(1 / step)
    assert len(grid) == comb(units + n - 1, n - 1)  # compositions of `units` into n parts
    assert all(sum(w.values()) == pytest.approx(1.0) for w in grid)
    assert len({tuple(w.values()) for w in grid}) == len(grid)


def test_a_step_that_does_not_divide_one_is_refused() -> None:
    with pytest.raises(UsageError, match="must divide 1"):
        list(weight_grid(["a", "b"], 0.3))


def test_the_retriever_that_finds_the_answers_gets_the_weight() -> None:
    answers = [f"c{i}" for i in range(8)]
    good = [[(a, 1.0), *((c, 0.5) for c in answers if c != a)] for a in answers]
    bad = [[(c, 1.0 - i / 10) for i, c in enumerate(answers)] for _ in answers]
    tuned = tune_weights({"bad": bad, "good": good}, [[a] for a in answers], k=1)
    assert tuned.score == 1.0 and tuned.weights["good"] > tuned.weights["bad"]
    assert tuned.tried == 11 and tuned.queries == 8


def test_the_gate_tunes_on_tune_and_judges_test(tmp_path: Path) -> None:
    texts = {f"q{i}": f"question {i}" for i in range(10)}
    answers = {t: f"c{i}" for i, t in enumerate(texts.values())}
    (tmp_path / "tune_rets.py").write_text(RETRIEVERS.format(answers=answers), encoding="utf-8")
    golden = {"name": "g", "version": "1", "top_k": 1, "queries": [
        {"id": q, "text": t, "expected": [answers[t]], "split": "tune" if i < 6 else "test"}
        for i, (q, t) in enumerate(texts.items())]}
    (tmp_path / "golden.json").write_text(json.dumps(golden), encoding="utf-8")
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text("retrievers:\n  bad: python:tune_rets:bad\n  good: python:tune_rets:good\n"
                        "depth: 10\nfuse: {method: wsum, weights: {bad: 1, good: 0}}\n",
                        encoding="utf-8")
    base = ["gate", str(tmp_path / "golden.json"), "--pipeline", str(pipeline), "--no-history",
            "--format", "json"]
    code, out, err = cli(*base)
    assert code in (0, 1), err
    untuned = json.loads(out)
    code, out, err = cli(*base, "--tune-weights")
    assert code in (0, 1), err
    result = json.loads(out)
    tuned = result["stages"]["tuned"]
    assert tuned["queries"] == 6 and tuned["weights"]["good"] > tuned["weights"]["bad"]
    assert {q["id"] for q in result["queries"]} == {"q6", "q7", "q8", "q9"}  # test only
    assert result["aggregate"]["mean_recall"] == 1.0 > untuned["aggregate"]["mean_recall"]
    assert result["config"]["pipeline"]["fuse"]["weights"] == tuned["weights"]


def test_tuning_without_a_tune_split_is_refused(tmp_path: Path) -> None:
    (tmp_path / "golden.json").write_text(json.dumps({"name": "g", "queries": [
        {"id": "q", "text": "t", "expected": ["c"]}]}), encoding="utf-8")
    (tmp_path / "p.yaml").write_text(
        "retrievers: {a: 'python:x:f', b: 'python:x:g'}\nfuse: {method: wsum, weights: {a: 1, "
        "b: 1}}\n", encoding="utf-8")
    (tmp_path / "x.py").write_text("def f(q, k):\n    return []\ng = f\n", encoding="utf-8")
    code, _, err = cli("gate", str(tmp_path / "golden.json"), "--pipeline",
                       str(tmp_path / "p.yaml"), "--no-history", "--tune-weights")
    assert code == 2 and "split: tune" in err
