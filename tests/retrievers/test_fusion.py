"""Fusion gives ranx's results (``ranx.fuse``) for every method and normalisation, on random
runs with tied scores, lists of different lengths and queries one retriever has no hits for; and
bad settings are errors that say what is valid."""

from __future__ import annotations

import random

import pytest

from recallwatch.errors import UsageError
from recallwatch.retrievers.base import Hit
from recallwatch.retrievers.fusion import METHODS, NORMS, fuse
from tests.reference import reference_library

RANX_METHOD = {"rrf": "rrf", "combsum": "sum", "combmnz": "mnz", "combmax": "max",
               "wsum": "wsum"}
NAMES = ["dense", "keyword", "api"]
WEIGHTS = {"dense": 0.2, "keyword": 0.5, "api": 0.3}


def random_runs(seed: int, queries: int = 8, *,
                empty: bool = True) -> dict[str, dict[str, dict[str, float]]]:
    """{name: {query: {doc: score}}}: ties (scores drawn from a few values), 1-9 hits, and (with
    ``empty``) queries a retriever returns nothing for, q0 by every retriever."""
    rng = random.Random(seed)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in NAMES:
        run = {}
        for q in range(queries):
            n = rng.choice([0, 1, 2, 5, 9] if empty else [1, 2, 5, 9]) if q or not empty else 0
            docs = rng.sample([f"d{i}" for i in range(14)], n)
            run[f"q{q}"] = {d: rng.choice([0.25, 0.5, 0.5, 1.0, 3.0, -0.5, rng.random()])
                            for d in docs}
        out[name] = run
    return out


@pytest.mark.slow  # numba compiles ranx's kernels on first use: minutes on a busy machine
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning",
                            "ignore:.*unsafe cast from uint64 to int64")
@pytest.mark.parametrize("seed", [1, 2])
def test_every_method_and_norm_equals_ranx(seed: int) -> None:
    ranx = reference_library("ranx")
    for method in METHODS:
        for norm in [None, *NORMS]:
            # ranx's zmuv fails on a list without hits (the mean of nothing) inside a parallel
            # loop, and silently drops every query that loop's worker held: zmuv is compared on
            # runs without empty lists (recallwatch normalises an empty list to an empty list)
            raw = random_runs(seed, empty=norm != "zmuv")
            queries = sorted(raw[NAMES[0]])
            runs = [ranx.Run.from_dict(raw[n], name=n) for n in NAMES]
            # each list in ranx's own rank order (it sorts by score; among ties, its own order)
            lists: dict[str, list[list[Hit]]] = {
                n: [list(r.run[q].items()) if q in r.run else [] for q in queries]
                for n, r in zip(NAMES, runs)}
            if method == "rrf" and norm == "borda":
                continue  # refused: ranx's answer depends on Python's set order
            params = ({"weights": [WEIGHTS[n] for n in NAMES]} if method == "wsum"
                      else {"k": 60} if method == "rrf" else {})
            theirs = ranx.fuse(runs, norm=norm, method=RANX_METHOD[method],
                               params=params).to_dict()
            mine = fuse(lists, method=method, norm=norm, k=60,
                        weights=WEIGHTS if method == "wsum" else None)
            for q, hits in zip(queries, mine):
                got, want = dict(hits), theirs.get(q, {})
                assert set(got) == set(want), (method, norm, q)
                for doc, score in got.items():
                    assert score == pytest.approx(want[doc], abs=1e-9), (method, norm, q, doc)
                # rank order: non-increasing scores (ranx's own order among ties is its own)
                assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_rrf_is_the_sum_of_reciprocal_ranks() -> None:
    a: list[list[Hit]] = [[("x", 9.0), ("y", 5.0), ("z", 1.0)]]
    b: list[list[Hit]] = [[("z", 0.9), ("w", 0.8)]]
    fused = dict(fuse({"a": a, "b": b}, method="rrf", k=10)[0])
    assert fused == pytest.approx({"x": 1 / 11, "y": 1 / 12, "z": 1 / 13 + 1 / 11, "w": 1 / 12})


def test_ties_keep_the_order_chunks_were_first_met() -> None:
    a: list[list[Hit]] = [[("x", 1.0), ("y", 1.0)]]
    b: list[list[Hit]] = [[("y", 1.0), ("x", 1.0)]]
    assert [c for c, _ in fuse({"a": a, "b": b}, method="combsum")[0]] == ["x", "y"]
    assert [c for c, _ in fuse({"b": b, "a": a}, method="combsum")[0]] == ["y", "x"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "rrff"}, r"unknown fusion method 'rrff' \(did you mean 'rrf'\?\); valid: rrf, "
                         r"combsum, combmnz, combmax, wsum"),
    ({"method": "combsum", "norm": "minmax"}, r"unknown normalisation 'minmax' .*valid: min-max"),
    ({"method": "wsum"}, r"wsum needs weights: give one per retriever \(a, b\)"),
    ({"method": "wsum", "weights": {"a": 1.0}}, r"missing: b"),
    ({"method": "wsum", "weights": {"a": 1.0, "b": 1.0, "c": 2.0}},
     r"unknown retriever\(s\) 'c'.*retrievers: a, b"),
    ({"method": "rrf", "weights": {"a": 1.0, "b": 1.0}}, r"weights apply to wsum only"),
    ({"method": "rrf", "norm": "borda"}, r"rrf reads only ranks"),
])
def test_bad_settings_say_what_is_valid(kwargs: dict[str, object], message: str) -> None:
    runs: dict[str, list[list[Hit]]] = {"a": [[("x", 1.0)]], "b": [[("y", 1.0)]]}
    with pytest.raises(UsageError, match=message):
        fuse(runs, **kwargs)  # type: ignore[arg-type]


def test_runs_of_different_query_counts_are_refused() -> None:
    with pytest.raises(UsageError, match="different numbers of queries"):
        fuse({"a": [[("x", 1.0)]], "b": []}, method="rrf")
