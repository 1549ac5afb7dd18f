"""RBP(p) and Judged@k against ir_measures (RBP through trectools, Judged through its own
implementation) on the generated collections of test_against_pytrec_eval: frequent score ties,
grades from -1 to 3, judged queries absent from the run (they score 0).

Both references order a tie differently from trec_eval (Judged by ascending document id,
trectools averages the weights of a tied group), so they are given the run with every tie
resolved the way recallwatch (and trec_eval) resolves it: by document id, descending. The
comparison then checks the order recallwatch gives to ties as well as the value. ``RBP``
without ``rel`` multiplies each weight by the grade in both; recallwatch's ``RBP(rel=N)`` is
binary (grade >= N), which is ir_measures' value on judgments where each such grade is made 1.
"""

from __future__ import annotations

import warnings

import ir_measures
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallwatch.metrics import Qrels, Run, evaluate
from tests.metrics.test_against_pytrec_eval import collections

Collection = tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]


def untied(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The same rankings with distinct scores: each query's order is score descending, then
    document id descending (trec_eval's), and no score repeats across queries either
    (trectools looks for ties across the boundary between two queries)."""
    out: dict[str, dict[str, float]] = {}
    base = 0.0
    for qid in sorted(run, reverse=True):
        docs = run[qid]
        order = sorted(docs, key=lambda d: (docs[d], d.encode()), reverse=True)
        out[qid] = {d: base + len(order) - i for i, d in enumerate(order)}
        base += 100.0
    return out


def _reference(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
               names: list[str]) -> dict[tuple[str, str], float]:
    # ir_measures' default pipeline leaves trectools out: its provider is asked by name
    provider = ir_measures.providers.registry["trectools" if names[0].startswith("RBP")
                                              else "judged"]
    with warnings.catch_warnings():  # pandas' deprecation notes about trectools' own code
        warnings.simplefilter("ignore")
        return {(str(m.measure), m.query_id): float(m.value)
                for m in provider.iter_calc([ir_measures.parse_measure(n) for n in names],
                                            qrels, run)}


def _binary(qrels: dict[str, dict[str, int]], rel: int) -> dict[str, dict[str, int]]:
    return {q: {d: 1 if g >= rel else min(g, 0) for d, g in docs.items()}
            for q, docs in qrels.items()}


def _compare(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
             ours: list[str], theirs: list[str], reference_qrels: dict[str, dict[str, int]]
             ) -> None:
    reference = _reference(reference_qrels, untied(run), theirs)
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ours)
    assert res.query_ids == sorted(qrels)
    for measure, name in zip(res.measures, theirs, strict=True):
        for i, qid in enumerate(res.query_ids):
            expected = reference.get((str(ir_measures.parse_measure(name)), qid), 0.0)
            assert res.per_query[measure][i] == pytest.approx(expected, abs=1e-12), (
                str(measure), qid)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.sampled_from([0.5, 0.8, 0.95]), st.sampled_from([None, 1, 3, 10]),
       st.integers(1, 3))
def test_rbp_matches_ir_measures(data: Collection, p: float, k: int | None, rel: int) -> None:
    qrels, run = data
    cut = "" if k is None else f"@{k}"
    params = ([f"p={p}"] if p != 0.8 else []) + ([f"rel={rel}"] if rel != 1 else [])
    ours = f"RBP({','.join(params)}){cut}" if params else f"RBP{cut}"
    theirs = f"RBP(p={p}){cut}"
    _compare(qrels, run, [ours], [theirs], qrels if rel == 1 else _binary(qrels, rel))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections())
def test_judged_matches_ir_measures_with_ties(data: Collection) -> None:
    qrels, run = data
    names = ["Judged@1", "Judged@3", "Judged@10", "Judged@20"]
    _compare(qrels, run, names, names, qrels)


def test_untied_keeps_the_order_recallwatch_gives_ties() -> None:
    run = {"q": {"a": 1.0, "b": 1.0, "B": 1.0, "c": 2.0}, "r": {"x": 1.0}}
    untie = untied(run)
    assert sorted(untie["q"], key=untie["q"].__getitem__, reverse=True) == ["c", "b", "a", "B"]
    assert len({s for docs in untie.values() for s in docs.values()}) == 5
    # the tie between a and b decides RBP: only a is relevant
    qrels = {"q": {"a": 1}}
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["RBP(p=0.5)"])
    assert res.per_query[res.measures[0]].tolist() == [0.5 * 0.5 ** 2]
    reference = _reference(qrels, untie, ["RBP(p=0.5)"])
    assert reference[("RBP(p=0.5)", "q")] == pytest.approx(0.5 * 0.5 ** 2)
    # trectools on the tied run averages the weights of a tied group instead, and its group runs
    # on into the next query: c's three followers and r's first document (x, also 1.0)
    tied = _reference(qrels, run, ["RBP(p=0.5)"])[("RBP(p=0.5)", "q")]
    assert tied == pytest.approx(0.5 * (0.5 + 0.25 + 0.125 + 1) / 4)


def test_graded_rbp_by_hand_with_grades_up_to_5_and_minus_1() -> None:
    """Graded RBP on one ranking, computed by hand: the gain is the grade (ir_measures'
    definition; Moffat & Zobel's relevance in [0, 1] is the grade over the largest grade), a
    grade of 0 or -1 adds nothing, and the tie between a and b is ordered as every measure
    orders it: by document id descending, so b (-1) takes rank 1 and a (5) rank 2."""
    qrels = {"q": {"a": 5, "b": -1, "c": 0, "d": 3, "f": 1, "g": 4}}
    run = {"q": {"a": 0.9, "b": 0.9, "c": 0.8, "d": 0.7, "e": 0.6, "f": 0.5}}
    # ranks: b 1, a 2, c 3, d 4, e 5 (unjudged), f 6; g (grade 4) never retrieved
    by_hand = 0.2 * (5 * 0.8 ** 1 + 3 * 0.8 ** 3 + 1 * 0.8 ** 5)
    assert by_hand == pytest.approx(1.172736, abs=1e-12)
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run),
                   ["RBP", "RBP@3", "RBP(rel=2)", "RBP(p=0.5)"])
    values = {str(m): float(res.per_query[m][0]) for m in res.measures}
    assert values == pytest.approx({
        "RBP": 1.172736,
        "RBP@3": 0.2 * 5 * 0.8,  # a alone within the top 3
        "RBP(rel=2)": 0.2 * (0.8 + 0.8 ** 3),  # binary: a and d count 1 each
        "RBP(p=0.5)": 0.5 * (5 * 0.5 + 3 * 0.5 ** 3 + 1 * 0.5 ** 5),
    }, abs=1e-12)
    # trectools (what ir_measures calls) implements the same definition: given the same ranking
    # without the tie, it gives the same value
    key = (str(ir_measures.parse_measure("RBP(p=0.8)")), "q")
    assert _reference(qrels, untied(run), ["RBP(p=0.8)"])[key] == pytest.approx(by_hand, abs=1e-12)
    # on the tied run it gives a and b the mean weight of ranks 1 and 2 instead (Moffat's
    # rbp_eval does the same): 5 * 0.2 * (1 + 0.8) / 2 for a, hence the gap between the two
    averaged = 0.2 * (5 * (1 + 0.8) / 2 + 3 * 0.8 ** 3 + 1 * 0.8 ** 5)
    assert _reference(qrels, run, ["RBP(p=0.8)"])[key] == pytest.approx(averaged, abs=1e-12)
