"""Query-by-query agreement with pytrec_eval (trec_eval's own C code) on generated collections.

pytrec_eval stores scores as float32, so generated scores are float32-exact; they come from a
small set of values so that ties are frequent and the document-id tie-break is exercised.
Judged-but-absent queries are compared against 0 (trec_eval -c), since pytrec_eval only reports
queries present in the run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.metrics import Qrels, Run, evaluate

# recallwatch name -> pytrec_eval measure key
MEASURES = {
    "P@1": "P_1",
    "P@5": "P_5",
    "P@10": "P_10",
    "R@5": "recall_5",
    "R@10": "recall_10",
    "RR": "recip_rank",
    "nDCG": "ndcg",
    "nDCG@3": "ndcg_cut_3",
    "nDCG@10": "ndcg_cut_10",
    "nDCG@20": "ndcg_cut_20",
    "AP": "map",
    "AP@1": "map_cut_1",
    "AP@5": "map_cut_5",
    "AP@10": "map_cut_10",
    "AP@20": "map_cut_20",
    "Rprec": "Rprec",
    "Success@1": "success_1",
    "Success@5": "success_5",
    # Rcap@k (denominator min(|rel|, k)) is trec_eval's relative_P.k; 20 is past every ranking
    "Rcap@1": "relative_P_1",
    "Rcap@5": "relative_P_5",
    "Rcap@20": "relative_P_20",
}
PYTREC_MEASURES = {
    "P.1,5,10",
    "recall.5,10",
    "recip_rank",
    "ndcg",
    "ndcg_cut.3,10,20",
    "map",
    "map_cut.1,5,10,20",
    "Rprec",
    "success.1,5",
    "relative_P.1,5,20",
}

DOCS = [f"d{i}" for i in range(12)] + ["D1", "d10a", "z", "a"]  # mixed case and lengths
SCORES = [float(np.float32(x)) for x in (-1.5, 0.0, 0.25, 0.5, 1.0, 3.0, 1e-3, 7.75)]


@st.composite
def collections(draw: Any) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    n_queries = draw(st.integers(1, 6))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        judged = draw(st.lists(st.sampled_from(DOCS), max_size=10, unique=True))
        in_run = draw(st.booleans()) or not judged
        if judged:
            grades = [draw(st.integers(-1, 3)) for _ in judged]
            # trec_eval's ndcg_cut loops forever when every judgment of a query is negative
            # (its ideal-gain loop reads rel_levels[-1]); that case is tested on its own below.
            grades[0] = max(grades[0], 0)
            qrels[qid] = dict(zip(judged, grades, strict=True))
        if in_run:
            retrieved = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=14, unique=True))
            run[qid] = {d: draw(st.sampled_from(SCORES)) for d in retrieved}
    if not qrels:
        qrels["q0"] = {"d0": 1}
    return qrels, run


def _pytrec(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], **kw: Any
) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, **kw)
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


def _check(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], rel: int = 1
) -> None:
    names = list(MEASURES) if rel == 1 else [m for m in MEASURES if not m.startswith("nDCG")]
    asked = [
        n if rel == 1 else n.replace("@", f"(rel={rel})@", 1) if "@" in n else f"{n}(rel={rel})"
        for n in names
    ]
    reference = _pytrec(qrels, run, relevance_level=rel)
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), asked)
    assert res.query_ids == sorted(qrels)
    for name, measure in zip(names, res.measures, strict=True):
        for i, qid in enumerate(res.query_ids):
            expected = reference[qid][MEASURES[name]] if qid in reference else 0.0
            got = res.per_query[measure][i]
            assert got == pytest.approx(expected, abs=1e-12), (str(measure), qid)
        assert res.aggregate[measure] == pytest.approx(
            np.mean([reference.get(q, {}).get(MEASURES[name], 0.0) for q in res.query_ids]),
            abs=1e-12,
        )


@settings(max_examples=300, deadline=None)
@given(collections())
def test_matches_pytrec_eval(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
) -> None:
    _check(*data)


@settings(max_examples=150, deadline=None)
@given(collections(), st.integers(2, 3))
def test_relevance_threshold_matches_pytrec_eval(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]], rel: int
) -> None:
    _check(*data, rel=rel)


@settings(max_examples=150, deadline=None)
@given(collections())
def test_exp_gain_matches_pytrec_eval_on_transformed_grades(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
) -> None:
    # nDCG(dcg=exp-log2) is trec_eval's nDCG with each grade g >= 1 replaced by 2^g - 1.
    qrels, run = data
    exp_qrels = {
        q: {d: (2**g - 1 if g > 0 else g) for d, g in docs.items()} for q, docs in qrels.items()
    }
    reference = _pytrec(exp_qrels, run)
    res = evaluate(
        Qrels.from_dict(qrels), Run.from_dict(run), ["nDCG(dcg=exp-log2)", "nDCG(dcg=exp-log2)@3"]
    )
    for measure, key in zip(res.measures, ["ndcg", "ndcg_cut_3"], strict=True):
        for i, qid in enumerate(res.query_ids):
            expected = reference[qid][key] if qid in reference else 0.0
            assert res.per_query[measure][i] == pytest.approx(expected, abs=1e-12)


def test_capped_recall_is_relative_precision() -> None:
    # precision while k <= |rel| (3 here), recall beyond, a short ranking divided by k all the same
    qrels = {"q": {"a": 1, "b": 2, "c": 1, "x": 0}}
    run = {"q": {"a": 4.0, "x": 3.0, "b": 2.0, "z": 1.0}}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"relative_P.1,2,3,5,10"}).evaluate(run)["q"]
    asked = [f"Rcap@{k}" for k in (1, 2, 3, 5, 10)]
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), asked)
    got = [float(res.per_query[m][0]) for m in res.measures]
    assert got == [1.0, 0.5, 2 / 3, 2 / 3, 2 / 3]
    assert got == [reference[f"relative_P_{k}"] for k in (1, 2, 3, 5, 10)]


def test_query_with_only_negative_judgments_scores_zero() -> None:
    # trec_eval (and so pytrec_eval) hangs on this input; by its definitions every measure is 0.
    qrels = Qrels.from_dict({"q": {"a": -1, "b": -1}, "r": {"c": 1}})
    run = Run.from_dict({"q": {"a": 2.0, "b": 1.0}, "r": {"c": 1.0}})
    res = evaluate(qrels, run, list(MEASURES))
    for m in res.measures:
        top = 1.0 / m.cutoff if m.name == "P" and m.cutoff else 1.0
        assert res.per_query[m].tolist() == [0.0, top], str(m)
