"""Fusion gives ranx's results (``ranx.fuse``) for every method and normalisation, on random
runs with tied scores, lists of different lengths and queries one retriever has no hits for; the
same lists, scores and order, to the last bit, as fusing each query alone by the definitions
(fusion computes all queries at once, on arrays); and bad settings are errors that say what is
valid."""

from __future__ import annotations

import random

import numpy as np
import pytest

from recallwatch.errors import UsageError
from recallwatch.retrievers.base import Hit
from recallwatch.retrievers.fusion import METHODS, NORMS, fuse, normalize
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


def test_ties_are_ordered_by_id_descending_as_the_measures_rank_them() -> None:
    a: list[list[Hit]] = [[("x", 1.0), ("y", 1.0)]]
    b: list[list[Hit]] = [[("y", 1.0), ("x", 1.0)]]
    assert [c for c, _ in fuse({"a": a, "b": b}, method="combsum")[0]] == ["y", "x"]
    assert [c for c, _ in fuse({"b": b, "a": a}, method="combsum")[0]] == ["y", "x"]
    # rrf: rank 1 in one list and 2 in the other, and the reverse, is an exact tie
    c: list[list[Hit]] = [[("x", 0.9), ("y", 0.8), ("z", 0.1)]]
    d: list[list[Hit]] = [[("y", 5.0), ("x", 4.0)]]
    fused = fuse({"c": c, "d": d}, method="rrf", k=60)[0]
    assert [cid for cid, _ in fused] == ["y", "x", "z"] and fused[0][1] == fused[1][1]


def test_combmax_keeps_scores_below_minus_a_billion() -> None:
    """zmuv, or raw scores without a norm, may be very negative: the best score wins whatever it
    is (there used to be a floor at -1e9)."""
    a: list[list[Hit]] = [[("x", -5e9), ("y", -7e9)]]
    b: list[list[Hit]] = [[("y", -2e9)]]
    assert fuse({"a": a, "b": b}, method="combmax") == [[("y", -2e9), ("x", -5e9)]]


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
    *(({"method": "wsum", "weights": {"a": 1.0, "b": w}},
       rf"^the weight of 'b' must be a finite number >= 0, found {shown}$")
      for w, shown in ((-1.0, "-1.0"), (float("nan"), "nan"), (float("inf"), "inf"),
                       ("2", "'2'"), (True, "True"))),
    ({"method": "wsum", "weights": {"a": 0, "b": 0.0}},
     r"^the weights are all 0 \(a, b\): give at least one retriever a weight above 0$"),
])
def test_bad_settings_say_what_is_valid(kwargs: dict[str, object], message: str) -> None:
    runs: dict[str, list[list[Hit]]] = {"a": [[("x", 1.0)]], "b": [[("y", 1.0)]]}
    with pytest.raises(UsageError, match=message):
        fuse(runs, **kwargs)  # type: ignore[arg-type]


def test_runs_of_different_query_counts_are_refused() -> None:
    with pytest.raises(UsageError, match="different numbers of queries"):
        fuse({"a": [[("x", 1.0)]], "b": []}, method="rrf")


# Lists whose (normalised) scores are far below -1e9: ``max`` normalisation divides a list of
# negative scores by its floor of 1e-9 (-3 becomes -3e9), and raw scores may be anything.
LOW: dict[str, list[list[Hit]]] = {
    "a": [[("z", -1.0), ("x", -3.0), ("y", -4.0)], [("p", 2.0), ("q", 1.0)]],
    "b": [[("y", -2.0), ("w", -6.0)], [("p", -1.0), ("r", -3.0)]],
}


def _best_present(runs: dict[str, list[list[Hit]]], norm: str | None) -> list[dict[str, float]]:
    """combmax by its definition: each chunk's best score over the lists that returned it."""
    out = []
    for q in range(len(runs["a"])):
        lists = [dict(runs[n][q]) for n in runs]
        if norm is not None:
            lists = normalize(lists, norm)
        out.append({c: max(hits[c] for hits in lists if c in hits)
                    for c in dict.fromkeys(c for hits in lists for c in hits)})
    return out


@pytest.mark.parametrize("norm", [None, "max"])
def test_combmax_is_the_best_score_whatever_its_value(norm: str | None) -> None:
    fused = fuse(LOW, method="combmax", norm=norm)
    assert [dict(hits) for hits in fused] == _best_present(LOW, norm)
    if norm == "max":  # -1e9, -3e9 and -6e9 apart, not three chunks tied at a floor of -1e9
        assert [c for c, _ in fused[0]] == ["z", "y", "x", "w"]
        assert [s for _, s in fused[0]] == pytest.approx([-1e9, -2e9, -3e9, -6e9])


@pytest.mark.slow  # numba compiles ranx's kernels on first use: minutes on a busy machine
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning",
                            "ignore:.*unsafe cast from uint64 to int64")
@pytest.mark.parametrize("norm", [None, "max"])
def test_combmax_departs_from_ranx_only_below_its_floor(norm: str | None) -> None:
    """ranx counts a chunk a list did not return as -1e9 there, so it floors such a chunk at
    -1e9; everywhere else the two agree."""
    ranx = reference_library("ranx")
    runs = [ranx.Run.from_dict({f"q{q}": dict(hits) for q, hits in enumerate(lists)}, name=n)
            for n, lists in LOW.items()]
    theirs = ranx.fuse(runs, norm=norm, method="max").to_dict()
    mine = fuse(LOW, method="combmax", norm=norm)
    for q, hits in enumerate(mine):
        everywhere = set.intersection(*(set(dict(LOW[n][q])) for n in LOW))
        assert theirs[f"q{q}"] == pytest.approx(
            {c: s if c in everywhere else max(s, -1e9) for c, s in hits}, rel=1e-12)
    if norm == "max":
        assert dict(mine[0])["x"] == pytest.approx(-3e9)
        assert theirs["q0"]["x"] == pytest.approx(-1e9)  # ranx's floor


def _by_definition(lists: list[list[Hit]], method: str, norm: str | None, k: int,
                   weights: list[float]) -> list[Hit]:
    """One query fused as the module docstring defines it, a chunk at a time in plain Python
    (the way fusion was computed before it worked on all queries at once)."""
    scored = [dict(hits) for hits in lists]  # a repeated chunk: first rank, last score
    if norm == "borda":
        every = list(dict.fromkeys(c for hits in scored for c in hits))
        scored = [{c: 1 - list(hits).index(c) / len(every) if c in hits
                   else 0.5 - (len(hits) - 1) / (2 * len(every)) for c in every}
                  for hits in scored]
    elif norm is not None:
        scored = [_normalised(hits, norm) for hits in scored]
    fused: dict[str, float] = {}
    for c in dict.fromkeys(c for hits in scored for c in hits):
        present = [(i, hits) for i, hits in enumerate(scored) if c in hits]
        if method == "rrf":
            fused[c] = sum(1 / (k + list(hits).index(c) + 1) for _, hits in present)
        elif method == "combmax":
            fused[c] = max(hits[c] for _, hits in present)
        else:
            total = sum((weights[i] if method == "wsum" else 1) * hits[c] for i, hits in present)
            fused[c] = total * len(present) if method == "combmnz" else total
    # best first; exact ties by id descending (a stable sort by id, then by score)
    return sorted(sorted(fused.items(), reverse=True), key=lambda item: -item[1])


def _normalised(hits: dict[str, float], norm: str) -> dict[str, float]:
    if not hits:
        return {}
    values = list(hits.values())
    lo, hi, n = min(values), max(values), len(values)
    if norm == "zmuv":
        mean, d = float(np.mean(values)), max(float(np.std(values)), 1e-9)
        return {c: (s - mean) / d for c, s in hits.items()}
    if norm == "rank":
        return {c: 1 - i / n for i, c in enumerate(hits)}
    lo_, d = {"min-max": (lo, max(hi - lo, 1e-9)), "max": (0.0, max(hi, 1e-9)),
              "sum": (lo, max(sum(values) - lo * n, 1e-9))}[norm]
    return {c: (s - lo_) / d for c, s in hits.items()}


def _lists(seed: int, queries: int, sizes: list[int], pool: list[str],
           values: list[float]) -> dict[str, list[list[Hit]]]:
    rng = random.Random(seed)
    return {name: [[(rng.choice(pool), rng.choice(values) if values else rng.uniform(-5, 40))
                    for _ in range(rng.choice(sizes))] for _ in range(queries)]
            for name in NAMES}


@pytest.mark.parametrize(("queries", "sizes", "values"), [
    (300, [0, 1, 2, 3], [1.0, 0.5, 2.0]),  # many short lists, ties everywhere
    (20, [0, 7, 9, 40], [1.0, 1.0, 0.0, -0.0, 0.25]),  # long runs of tied scores
    (4, [127, 129, 300], []),  # long lists (numpy sums more than 128 values pairwise)
])
def test_every_method_and_norm_equals_fusing_each_query_by_definition(
        queries: int, sizes: list[int], values: list[float]) -> None:
    # ids repeat within a list (kept once: first rank, last score), include a NUL, non-ASCII
    # and a prefix of another, and compare as Python compares str
    pool = [f"d{i}" for i in range(40)] + ["x", "x\x00", "x\x00\x00", "é", "\U0001F600", "d1\x00"]
    runs = _lists(queries, queries, sizes, pool, values)
    for method in METHODS:
        for norm in [None, *NORMS]:
            if method == "rrf" and norm == "borda":
                continue
            weights = {"dense": 0.2, "keyword": 0.0, "api": 1.5} if method == "wsum" else None
            got = fuse(runs, method=method, norm=norm, k=3, weights=weights)
            want = [_by_definition([runs[n][q] for n in NAMES], method, norm, 3,
                                   [weights[n] for n in NAMES] if weights else [])
                    for q in range(queries)]
            assert got == want, (method, norm)


def test_normalize_one_query_equals_the_definitions() -> None:
    lists = [{"a": 3.0, "b": 1.0, "c": 1.0}, {}, {"c": -2.0, "d": 0.5}]
    for norm in NORMS:
        got = normalize(lists, norm)
        if norm == "borda":
            every = ["a", "b", "c", "d"]
            want = [{c: 1 - list(h).index(c) / 4 if c in h else 0.5 - (len(h) - 1) / 8
                     for c in every} for h in lists]
        else:
            want = [_normalised(h, norm) for h in lists]
        assert got == want and [list(g) for g in got] == [list(w) for w in want], norm
