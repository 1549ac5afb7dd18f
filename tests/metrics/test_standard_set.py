"""trec_eval's standard set (counts, Bpref, infAP, GMAP, IPrec, 11-point average, set measures)
query by query against pytrec_eval (trec_eval's own C code), and ERR@k and Judged@k against
ir_measures, ERR@k and RBP against a direct transcription of their definitions, on generated
collections with ties, negative grades and judged queries absent from the run (trec_eval -c:
they score 0). RBP and Judged@k with ties are checked against ir_measures in
test_against_ir_measures.py."""

from __future__ import annotations

import math
from typing import Any

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallwatch.errors import UsageError
from recallwatch.metrics import Qrels, Run, evaluate, parse_measure
from tests.metrics.test_against_pytrec_eval import DOCS, SCORES, collections

Collection = tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]

# Levels where trec_eval 9 (bundled in pytrec_eval) and 10 turn x * |rel| into the same count
# of relevant documents; the others are checked below against a transcription of both rules.
LEVELS = ("0.0", "0.5", "1.0")
# recallwatch name -> pytrec_eval key
MEASURES = {
    "NumQ": "num_q", "NumRet": "num_ret", "NumRel": "num_rel", "NumRelRet": "num_rel_ret",
    "Bpref": "bpref", "infAP": "infAP", "GMAP": "gm_map",
    "SetP": "set_P", "SetR": "set_recall", "SetF": "set_F",
    **{f"IPrec@{x}": f"iprec_at_recall_{float(x):.2f}" for x in LEVELS},
}
PYTREC = {"num_q", "num_ret", "num_rel", "num_rel_ret", "bpref", "infAP", "gm_map", "11pt_avg",
          "set_P", "set_recall", "set_F", "iprec_at_recall"}


def _absent_value(name: str, judgments: dict[str, int], rel: int) -> float:
    """What trec_eval -c gives a judged query absent from the run."""
    if name.startswith("NumQ"):
        return 1.0
    if name.startswith("NumRel") and not name.startswith("NumRelRet"):
        return float(sum(g >= rel for g in judgments.values()))
    return 0.0


def _check(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], rel: int) -> None:
    asked = {n: n if rel == 1 else (n.replace("@", f"(rel={rel})@") if "@" in n
                                     else f"{n}(rel={rel})")
             for n in MEASURES if rel == 1 or n not in ("NumQ", "NumRet")}
    reference = pytrec_eval.RelevanceEvaluator(qrels, PYTREC, relevance_level=rel).evaluate(run)
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), list(asked.values()))
    for name, text in asked.items():
        measure = parse_measure(text)
        key = MEASURES[name]
        expected = [reference[q][key] if q in reference else _absent_value(name, qrels[q], rel)
                    for q in res.query_ids]
        got = res.per_query[measure].tolist()
        if name == "GMAP":  # pytrec_eval keeps trec_eval's per-query log(max(AP, 1e-5))
            got = [math.log(max(v, 1e-5)) for v in got]
            expected = [v if q in reference else math.log(1e-5)
                        for q, v in zip(res.query_ids, expected, strict=True)]
            assert res.aggregate[measure] == pytest.approx(math.exp(np.mean(expected)),
                                                           rel=1e-12)
        elif name.startswith("Num"):
            assert res.aggregate[measure] == sum(expected)
        else:
            assert res.aggregate[measure] == pytest.approx(np.mean(expected), abs=1e-12)
        assert got == pytest.approx(expected, abs=1e-12), (text, res.query_ids)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections())
def test_standard_set_matches_pytrec_eval(data: Collection) -> None:
    _check(*data, rel=1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.integers(2, 3))
def test_standard_set_with_a_relevance_threshold(data: Collection, rel: int) -> None:
    _check(*data, rel=rel)


def _iprec(grades: list[int], num_rel: int, level: float, rel: int, rule: str) -> float:
    """Interpolated precision as trec_eval's iprec_at_recall computes it, written out; ``rule``
    turns level * |rel| into a count: trec_eval 10 rounds half up, trec_eval 9 (pytrec_eval's)
    adds 0.9 and truncates."""
    target = level * num_rel
    needed = math.floor(target + 0.5) if rule == "10" else int(target + 0.9)
    ranks = [i for i, g in enumerate(grades, 1) if g >= rel]
    precisions = [m / r for m, r in enumerate(ranks, 1)]
    if needed > len(ranks) or not ranks:
        return 0.0
    return max(precisions[max(needed, 1) - 1:])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.integers(1, 2))
def test_interpolated_precision_at_every_level(data: Collection, rel: int) -> None:
    # trec_eval 9's rule, transcribed, equals pytrec_eval: the transcription is right; trec_eval
    # 10's rule, the same code otherwise, equals recallwatch (and tests/data/trec_eval's output)
    qrels, run = data
    levels = [i / 10 for i in range(11)]
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall", "11pt_avg"},
                                               relevance_level=rel).evaluate(run)
    suffix = "" if rel == 1 else f"(rel={rel})"
    asked = [f"IPrec{suffix}@{x}" for x in levels] + [f"AP11pt{suffix}"]
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), asked)
    for i, qid in enumerate(res.query_ids):
        grades = _ranked_grades(qrels[qid], run.get(qid, {}))
        num_rel = sum(g >= rel for g in qrels[qid].values())
        ours = [_iprec(grades, num_rel, x, rel, "10") for x in levels]
        for value, measure in zip(ours, res.measures, strict=False):
            assert res.per_query[measure][i] == pytest.approx(value, abs=1e-12)
        assert res.per_query[res.measures[-1]][i] == pytest.approx(sum(ours) / 11, abs=1e-12)
        if qid in reference:
            old = [_iprec(grades, num_rel, x, rel, "9") for x in levels]
            assert old == pytest.approx(
                [reference[qid][f"iprec_at_recall_{x:.2f}"] for x in levels], abs=1e-12)
            assert sum(old) / 11 == pytest.approx(reference[qid]["11pt_avg"], abs=1e-12)


def test_both_join_paths_agree_on_judged_measures() -> None:
    # a run in query blocks takes the grid join, one out of order the general join
    qrels = {"q1": {"a": 1, "b": 0, "c": -1, "d": 2}, "q2": {"x": 0, "y": 1}}
    rows = [("q1", "a", 1.0), ("q1", "b", 3.0), ("q1", "c", 2.0), ("q2", "y", 1.0),
            ("q2", "x", 2.0), ("q2", "z", 5.0)]
    blocked = {q: {d: s for qq, d, s in rows if qq == q} for q in ("q1", "q2")}
    names = ["Bpref", "infAP", "Judged@2", "Judged", "NumRet", "SetP", "AP11pt"]
    a = evaluate(Qrels.from_dict(qrels), Run.from_dict(blocked), names)
    import pyarrow as pa
    shuffled = Run(pa.array([r[0] for r in rows[::-1]]), pa.array([r[1] for r in rows[::-1]]),
                   np.array([r[2] for r in rows[::-1]]))
    b = evaluate(Qrels.from_dict(qrels), shuffled, names)
    for m in a.measures:
        assert a.per_query[m].tolist() == b.per_query[m].tolist(), str(m)
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"bpref", "infAP"}).evaluate(blocked)
    assert a.per_query[parse_measure("Bpref")].tolist() == [reference["q1"]["bpref"],
                                                            reference["q2"]["bpref"]]


# ERR, Judged: ir_measures. gdeval (ERR's provider) needs numeric query ids and grades <= 4,
# and prints five decimals; its Judged breaks score ties by ascending id, so scores are unique.
@st.composite
def numeric_collections(draw: Any) -> Collection:
    n_queries = draw(st.integers(1, 5))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        qrels[str(q + 1)] = {d: draw(st.integers(-1, 4)) for d in judged}
        if draw(st.booleans()) or q == 0:
            retrieved = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=14,
                                      unique=True))
            scores = draw(st.permutations(range(len(retrieved))))
            run[str(q + 1)] = {d: float(s) for d, s in zip(retrieved, scores, strict=True)}
    return qrels, run


def _ir_measures(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                 names: list[str]) -> dict[tuple[str, str], float]:
    return {(str(m.measure), m.query_id): m.value
            for m in ir_measures.iter_calc([ir_measures.parse_measure(n) for n in names],
                                           qrels, run)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numeric_collections())
def test_err_and_judged_match_ir_measures(data: Collection) -> None:
    qrels, run = data
    names = ["ERR@5", "ERR@20", "Judged@3", "Judged@10"]
    reference = _ir_measures(qrels, run, names)
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names)
    for m in res.measures:
        for i, qid in enumerate(res.query_ids):
            expected = reference.get((str(m), qid), 0.0)
            tolerance = 6e-6 if m.name == "ERR" else 1e-12  # gdeval prints %.5f
            assert res.per_query[m][i] == pytest.approx(expected, abs=tolerance), (str(m), qid)


def _err(grades: list[int], k: int | None) -> float:
    """ERR as its authors define it, written out: a cascade over the ranking."""
    total, still_looking = 0.0, 1.0
    for i, g in enumerate(grades[:k] if k else grades, start=1):
        stop = (2 ** min(max(g, 0), 4) - 1) / 16
        total += still_looking * stop / i
        still_looking *= 1 - stop
    return total


def _rbp(grades: list[int], p: float, rel: int, k: int | None) -> float:
    """Graded (each term times the grade) without ``rel``, binary (grade >= rel) with it."""
    return (1 - p) * sum(p ** (i - 1) * (g if rel == 1 else 1)
                         for i, g in enumerate(grades[:k] if k else grades, 1) if g >= rel)


def _ranked_grades(qrels: dict[str, int], run: dict[str, float]) -> list[int]:
    order = sorted(run, key=lambda d: (run[d], d.encode()), reverse=True)  # trec_eval's order
    return [qrels.get(d, 0) for d in order]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.sampled_from([0.5, 0.8, 0.95]), st.sampled_from([None, 3, 10]),
       st.integers(1, 2))
def test_err_and_rbp_match_their_definitions(data: Collection, p: float, k: int | None,
                                             rel: int) -> None:
    qrels, run = data
    cut = "" if k is None else f"@{k}"
    params = [f"p={p}"] if p != 0.8 else []
    params += [f"rel={rel}"] if rel != 1 else []
    rbp = f"RBP({','.join(params)}){cut}" if params else f"RBP{cut}"
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), [f"ERR{cut}", rbp])
    for i, qid in enumerate(res.query_ids):
        grades = _ranked_grades(qrels[qid], run.get(qid, {}))
        assert res.per_query[res.measures[0]][i] == pytest.approx(_err(grades, k), abs=1e-12)
        assert res.per_query[res.measures[1]][i] == pytest.approx(_rbp(grades, p, rel, k),
                                                                  abs=1e-12)


def test_measure_names_print_back() -> None:
    for text in ["IPrec@0.5", "IPrec(rel=2)@0.25", "RBP", "RBP(p=0.95)@10", "RBP(p=0.9,rel=2)",
                 "GMAP", "Bpref(rel=2)", "Judged@10", "ERR@20", "AP11pt", "SetF", "NumQ"]:
        assert str(parse_measure(text)) == text
    assert parse_measure("BPref") == parse_measure("Bpref")


@pytest.mark.parametrize(("text", "message"), [
    ("IPrec", "needs a recall level: write IPrec@x"),
    ("IPrec@1.5", "the recall level must be a number between 0 and 1, found 1.5"),
    ("IPrec@high", "recall level must be a number, found 'high'"),
    ("RBP(p=1)", "p must be a number strictly between 0 and 1, found 1.0"),
    ("NumQ@5", "takes no cut-off"),
    ("Judged(rel=2)@5", "takes no parameter 'rel'"),
])
def test_bad_measure_names_are_explained(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_measure(text)


def test_counts_are_summed_and_gmap_is_geometric() -> None:
    qrels = {"a": {"x": 1, "y": 1}, "b": {"z": 1}}
    run = {"a": {"x": 2.0, "w": 1.0}, "b": {"v": 1.0, "z": 0.5}}
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["NumRet", "NumRel", "GMAP", "AP"])
    got = {str(m): res.aggregate[m] for m in res.measures}
    assert got["NumRet"] == 4 and got["NumRel"] == 3
    assert got["AP"] == pytest.approx((0.5 + 0.5) / 2)
    assert got["GMAP"] == pytest.approx(math.sqrt(0.5 * 0.5))
    assert SCORES  # the shared generator's scores are float32-exact (see its module)
