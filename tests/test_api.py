"""The notebook verbs at the top of ``recallwatch``: ``evaluate``, ``compare`` and ``fuse`` take
qrels and runs in every shape a user holds them (objects, dicts, pandas and polars frames,
paths), index their results by the names given, turn them into dicts and frames, and refuse
bad input with a message that says what was expected. Values are checked against pytrec_eval
(evaluate) and ranx (fuse, compare)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import recallwatch as rw
from recallwatch.errors import InputError, UsageError
from recallwatch.retrievers.fusion import METHODS, NORMS, SCORE_METHODS, fuse
from tests.reference import reference_library

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

MEASURES = ["nDCG@10", "P@5", "AP", "RR", "R@10"]
PYTREC = {"nDCG@10": "ndcg_cut_10", "P@5": "P_5", "AP": "map", "RR": "recip_rank",
          "R@10": "recall_10"}


def random_data(seed: int, queries: int = 12) -> tuple[dict[str, dict[str, int]],
                                                        dict[str, dict[str, float]]]:
    """Graded qrels and a run with distinct scores (no ties: every library ranks alike)."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        docs = [f"d{i}" for i in range(30)]
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, 8)}
        scores = rng.sample(range(1000), 20)
        run[f"q{q}"] = {d: s / 100 for d, s in zip(rng.sample(docs, 20), scores, strict=True)}
    return qrels, run


def frame(nested: dict[str, dict[str, Any]], value: str, library: str) -> Any:
    rows = [{"query_id": q, "doc_id": d, value: v} for q, docs in nested.items()
            for d, v in docs.items()]
    return pd.DataFrame(rows) if library == "pandas" else pl.DataFrame(rows)


def trec_files(tmp_path: Path, qrels: dict[str, dict[str, int]],
               run: dict[str, dict[str, float]]) -> tuple[Path, Path]:
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                             for d, g in docs.items()), encoding="utf-8")
    rpath.write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for q, docs in run.items()
                             for i, (d, s) in enumerate(docs.items(), 1)), encoding="utf-8")
    return qpath, rpath


# --- evaluate --------------------------------------------------------------------------------

def test_evaluate_equals_pytrec_eval_and_keys_by_the_names_given() -> None:
    pytrec_eval = reference_library("pytrec_eval")
    qrels, run = random_data(1)
    res = rw.evaluate(qrels, run, MEASURES)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)
    for name, key in PYTREC.items():
        for qid in qrels:
            assert res.to_dict()["per_query"][qid][name] == pytest.approx(theirs[qid][key],
                                                                           abs=1e-12)
        mean = sum(theirs[q][key] for q in qrels) / len(qrels)
        assert res.aggregate[name] == pytest.approx(mean, abs=1e-12)
    assert list(res.aggregate) == MEASURES  # the names given, in order
    assert res.aggregate[rw.parse_measure("nDCG@10")] == res.aggregate["nDCG@10"]


@pytest.mark.parametrize("shape", ["objects", "pandas", "polars", "paths", "str paths"])
def test_evaluate_takes_every_shape(shape: str, tmp_path: Path) -> None:
    qrels, run = random_data(2)
    want = rw.evaluate(qrels, run, MEASURES).to_dict()
    given: tuple[Any, Any]
    if shape == "objects":
        given = rw.Qrels.from_dict(qrels), rw.Run.from_dict(run)
    elif shape in ("pandas", "polars"):
        given = frame(qrels, "relevance", shape), frame(run, "score", shape)
    else:
        paths = trec_files(tmp_path, qrels, run)
        given = paths if shape == "paths" else (str(paths[0]), str(paths[1]))
    assert rw.evaluate(*given, MEASURES).to_dict() == want


def test_evaluate_result_as_dict_frame_and_html() -> None:
    res = rw.evaluate({"q1": {"a": 1}, "q2": {"b": 2}}, {"q1": {"a": 0.9, "x": 0.5},
                                                        "q3": {"a": 0.1}}, ["P@1", "RR"])
    assert res.to_dict() == {
        "aggregate": {"P@1": 0.5, "RR": 0.5},
        "per_query": {"q1": {"P@1": 1.0, "RR": 1.0}, "q2": {"P@1": 0.0, "RR": 0.0}},
        "queries": {"evaluated": 2, "missing_from_run": ["q2"], "not_judged": ["q3"]}}
    assert res.to_frame().to_dict("records") == [{"query_id": "q1", "P@1": 1.0, "RR": 1.0},
                                                 {"query_id": "q2", "P@1": 0.0, "RR": 0.0}]
    assert res.to_frame("polars").to_dicts() == res.to_frame().to_dict("records")
    html = res._repr_html_()
    assert "<td>P@1</td><td>0.5000</td>" in html
    assert "1 judged but not in the run (scored 0)" in html


@pytest.mark.parametrize(("qrels", "run", "measures", "error", "message"), [
    ({"q": {"a": 1}}, [("q", "a", 1.0)], ["P@1"], UsageError,
     r"^expected a run: a \{query_id: \{doc_id: score\}\} dict, a pandas or polars DataFrame "
     r"with columns query_id, doc_id and score, a TREC run file's path or a Run; found list$"),
    ({"q": {"a": 1}}, {"q": ["a"]}, ["P@1"], InputError,
     r"^record 'q': expected a mapping \{doc_id: score\}, found <list>"),
    ({"q": {"a": 1.5}}, {"q": {"a": 1.0}}, ["P@1"], InputError,
     r"^field 'grade': expected an integer grade, found 1.5$"),
    (42, {"q": {"a": 1.0}}, ["P@1"], UsageError, r"^expected qrels: .* or a Qrels; found int$"),
    ({"q": {"a": 1}}, {"q": {"a": 1.0}}, 10, UsageError,
     r"^measures: expected a measure name such as 'nDCG@10' or a list of them; found int$"),
    ({"q": {"a": 1}}, {"q": {"a": 1.0}}, [], UsageError, r"^no measure given"),
])
def test_bad_input_says_what_was_expected(qrels: Any, run: Any, measures: Any,
                                          error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        rw.evaluate(qrels, run, measures)


def test_a_frame_without_the_columns_names_them() -> None:
    bad = pd.DataFrame({"qid": ["q"], "docid": ["a"], "score": [1.0]})
    with pytest.raises(InputError, match=r"field 'query_id': expected a column named "
                                         r"'query_id', found <columns qid, docid, score>"):
        rw.evaluate({"q": {"a": 1}}, bad, ["P@1"])


def test_an_unknown_measure_key_lists_the_evaluated_ones() -> None:
    res = rw.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["P@1", "RR"])
    with pytest.raises(KeyError, match="'AP' was not evaluated; evaluated: P@1, RR"):
        res.aggregate["AP"]


# --- Run -------------------------------------------------------------------------------------

def test_a_run_gives_its_ranked_lists_as_dict_iteration_and_frame() -> None:
    run = rw.Run.from_dict({"q2": {"a": 1.0, "b": 2.0, "c": 2.0}, "q1": {"x": 0.5}})
    # rank order: score descending, then document id descending (trec_eval's)
    assert run.to_dict() == {"q2": {"c": 2.0, "b": 2.0, "a": 1.0}, "q1": {"x": 0.5}}
    assert [list(docs) for _, docs in run] == [["c", "b", "a"], ["x"]]
    table = run.to_frame()
    assert table.to_dict("list") == {"query_id": ["q2", "q2", "q2", "q1"],
                                     "doc_id": ["c", "b", "a", "x"],
                                     "score": [2.0, 2.0, 1.0, 0.5], "rank": [1, 2, 3, 1]}
    assert rw.Run.from_frame(run.to_frame("polars")).to_dict() == run.to_dict()


# --- fuse ------------------------------------------------------------------------------------

def _settings() -> list[tuple[str, str | None]]:
    return [(m, n) for m in METHODS for n in [None, *NORMS] if not (m == "rrf" and n == "borda")]


@pytest.mark.parametrize(("method", "norm"), _settings())
def test_fuse_is_the_pipelines_fusion_run_by_run(method: str, norm: str | None) -> None:
    _, a = random_data(3)
    _, b = random_data(4)
    weights = [0.3, 0.7] if method == "wsum" else None
    fused = rw.fuse([a, b], method=method, norm=norm, weights=weights)
    assert isinstance(fused, rw.Run)
    lists = {"1": [list(rw.Run.from_dict(a).to_dict()[q].items()) for q in a],
             "2": [list(rw.Run.from_dict(b).to_dict()[q].items()) for q in a]}
    by_name = {"1": 0.3, "2": 0.7} if weights else None
    want = fuse(lists, method=method, norm=norm, weights=by_name)
    assert fused.to_dict() == {q: dict(hits) for q, hits in zip(a, want, strict=True)}


def test_fuse_defaults_are_the_pipeline_files() -> None:
    _, a = random_data(5)
    _, b = random_data(6)
    assert rw.fuse([a, b]).to_dict() == rw.fuse([a, b], method="rrf", norm=None).to_dict()
    assert (rw.fuse({"x": a, "y": b}, method="combsum").to_dict()
            == rw.fuse([a, b], method="combsum", norm="min-max").to_dict())
    assert (rw.fuse({"x": a, "y": b}, method="wsum", weights={"x": 0.2, "y": 0.8}).to_dict()
            == rw.fuse([a, b], method="wsum", weights=[0.2, 0.8]).to_dict())


def test_a_query_one_run_lacks_takes_the_others() -> None:
    fused = rw.fuse([{"q1": {"a": 1.0}}, {"q2": {"b": 1.0}}], method="rrf")
    assert fused.to_dict() == {"q1": {"a": 1 / 61}, "q2": {"b": 1 / 61}}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"runs": "run.txt"}, r"^runs: expected a list of runs or a mapping name -> run; found str$"),
    ({"runs": []}, r"^runs: give at least one run to fuse$"),
    ({"method": "wsum", "weights": [1.0]},
     r"^weights: expected one per run \(2\), in order, or a mapping by name \(1, 2\)"),
    ({"method": "rrff"}, r"unknown fusion method 'rrff' \(did you mean 'rrf'\?\)"),
])
def test_bad_fusion_input_says_what_was_expected(kwargs: dict[str, Any], message: str) -> None:
    runs = kwargs.pop("runs", [{"q": {"a": 1.0}}, {"q": {"b": 1.0}}])
    with pytest.raises(UsageError, match=message):
        rw.fuse(runs, **kwargs)


@pytest.mark.slow  # numba compiles ranx's kernels on first use: minutes on a busy machine
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning",
                            "ignore:.*unsafe cast from uint64 to int64")
def test_fuse_equals_ranx_for_every_method_and_norm() -> None:
    ranx = reference_library("ranx")
    method_names = {"rrf": "rrf", "combsum": "sum", "combmnz": "mnz", "combmax": "max",
                    "wsum": "wsum"}
    raw = [random_data(seed)[1] for seed in (7, 8, 9)]
    runs = [ranx.Run.from_dict(r, name=f"r{i}") for i, r in enumerate(raw)]
    for method, norm in _settings():
        params = ({"weights": [0.2, 0.5, 0.3]} if method == "wsum"
                  else {"k": 60} if method == "rrf" else {})
        theirs = ranx.fuse(runs, norm=norm, method=method_names[method],
                           params=params).to_dict()
        mine = rw.fuse(raw, method=method, norm=norm, weights=params.get("weights"))
        for qid, docs in mine:
            assert set(docs) == set(theirs[qid]), (method, norm, qid)
            for doc, score in docs.items():
                assert score == pytest.approx(theirs[qid][doc], abs=1e-9), (method, norm, doc)
    assert set(SCORE_METHODS) < set(METHODS)


# --- compare ---------------------------------------------------------------------------------

def test_compare_keys_by_the_names_given_and_agrees_with_evaluate(tmp_path: Path) -> None:
    qrels, a = random_data(10)
    _, b = random_data(11)
    _, c = random_data(12)
    res = rw.compare(qrels, {"bm25": a, "dense": b, "hybrid": c}, ["nDCG@10", "P@5"],
                     test="t")
    for name, run in (("bm25", a), ("dense", b), ("hybrid", c)):
        assert res.aggregate[name]["nDCG@10"] == pytest.approx(
            rw.evaluate(qrels, run, ["nDCG@10"]).aggregate["nDCG@10"], abs=1e-12)
    assert res.measures == ("nDCG@10", "P@5")
    assert {t.measure for t in res.tests} == {"nDCG@10", "P@5"}
    assert list(res.to_frame()["run"]) == ["bm25", "dense", "hybrid"]
    assert "<th>nDCG@10</th>" in res._repr_html_()
    # a list of paths is named by its paths
    paths = []
    for n, run in (("x", a), ("y", b)):
        (tmp_path / n).mkdir()
        paths.append(trec_files(tmp_path / n, qrels, run)[1])
    assert rw.compare(qrels, paths, "P@5").runs == (str(paths[0]), str(paths[1]))
    assert rw.compare(qrels, [a, b], "P@5").runs == ("run1", "run2")


@pytest.mark.slow  # numba compiles ranx's kernels on first use: minutes on a busy machine
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning",
                            "ignore:.*unsafe cast from uint64 to int64")
def test_compare_equals_ranx_means_and_paired_t_p_values() -> None:
    ranx = reference_library("ranx")
    qrels, a = random_data(13, queries=30)
    _, b = random_data(14, queries=30)
    mine = rw.compare(qrels, {"a": a, "b": b}, ["nDCG@10", "P@5"], test="t")
    report = ranx.compare(ranx.Qrels.from_dict(qrels),
                          [ranx.Run.from_dict(a, name="a"), ranx.Run.from_dict(b, name="b")],
                          ["ndcg@10", "precision@5"], stat_test="student").to_dict()
    for ours, theirs in (("nDCG@10", "ndcg@10"), ("P@5", "precision@5")):
        for run in ("a", "b"):
            assert mine.aggregate[run][ours] == pytest.approx(report[run]["scores"][theirs],
                                                              abs=1e-9)
        [test] = [t for t in mine.tests if t.measure == ours]
        assert test.p == pytest.approx(report["a"]["comparisons"]["b"][theirs], abs=1e-9)
