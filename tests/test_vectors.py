"""The package's one home for vector maths: unit rows, cosine scores and exact top-k, with one
precision rule (float64 inside, float32 out) and one tie rule (score, then id ascending), and the
order the measures give exact ties (id descending) for lists recallwatch scores."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from recallwatch.metrics import Qrels, Run, evaluate
from recallwatch.vectors import (
    cosine_pairs,
    cosine_scores,
    measured_tie_order,
    normalise,
    ties_as_measured,
    top_k,
    top_k_rows,
)


def test_normalise_gives_unit_float32_rows_and_keeps_zero_rows_zero() -> None:
    x = np.array([[3.0, 4.0], [0.0, 0.0], [-1e-30, 0.0]], dtype=np.float32)
    out = normalise(x)
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_array_equal(out[0], np.array([0.6, 0.8], dtype=np.float32))
    np.testing.assert_array_equal(out[1], [0.0, 0.0])
    np.testing.assert_array_equal(out[2], [-1.0, 0.0])  # float64 norms: no underflow to zero
    np.testing.assert_array_equal(normalise(np.array([3.0, 4.0])), out[0])  # a 1-D row


def test_normalise_is_the_float64_quotient_rounded_once() -> None:
    x = np.random.default_rng(0).normal(size=(50, 384)).astype(np.float32)
    x64 = x.astype(np.float64)
    want = (x64 / np.linalg.norm(x64, axis=1, keepdims=True)).astype(np.float32)
    np.testing.assert_array_equal(normalise(x), want)


def test_cosine_scores_match_a_float64_reference_and_zero_vectors_score_zero() -> None:
    rng = np.random.default_rng(1)
    q = rng.normal(size=(4, 16)).astype(np.float32)
    v = (rng.normal(size=(30, 16)) * rng.uniform(0.1, 9, size=(30, 1))).astype(np.float32)
    v[5] = 0.0
    q64, v64 = q.astype(np.float64), v.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = (q64 @ v64.T) / np.outer(np.linalg.norm(q64, axis=1), np.linalg.norm(v64, axis=1))
    ref[:, 5] = 0.0
    got = cosine_scores(q, v)
    assert got.dtype == np.float32 and got.shape == (4, 30)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-7)
    assert cosine_scores(q, v[:0]).shape == (4, 0) and cosine_scores(q[:0], v).shape == (0, 30)


def test_one_query_and_a_batch_score_to_the_same_bit() -> None:
    # the reason for the precision rule: search (a batch) and score_of (one row) must agree
    rng = np.random.default_rng(2)
    q = rng.normal(size=(64, 384)).astype(np.float32)
    v = rng.normal(size=(500, 384)).astype(np.float32)
    batch = cosine_scores(q, v)
    for i in (0, 17, 63):
        np.testing.assert_array_equal(cosine_scores(q[i], v)[0], batch[i])
        picked = [3, 99, 250]
        np.testing.assert_array_equal(cosine_scores(q[i], v[picked])[0], batch[i, picked])


def test_top_k_breaks_ties_by_id_whatever_the_stored_order() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.7, 0.5], dtype=np.float32)
    ids = ["e", "a", "c", "b", "d"]
    assert top_k(ids, scores, 4)[0] == ["a", "b", "c", "d"]
    found, best = top_k(ids[::-1], scores[::-1], 4)
    assert found == ["a", "b", "c", "d"] and best.dtype == np.float32
    np.testing.assert_array_equal(best, np.array([0.9, 0.7, 0.5, 0.5], dtype=np.float32))
    assert top_k(ids, scores, 99)[0] == ["a", "b", "c", "d", "e"]
    assert top_k(ids, scores, 0)[0] == [] and top_k([], scores[:0], 3)[0] == []
    with pytest.raises(ValueError, match="2 ids but 5 scores"):
        top_k(ids[:2], scores, 1)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float32, st.integers(1, 40), elements=st.sampled_from([0.0, 0.25, 0.5, 1.0])),
       st.integers(0, 45))
def test_top_k_equals_a_full_sort_by_score_then_id(scores: np.ndarray, k: int) -> None:
    ids = [f"c{i:03d}" for i in np.random.default_rng(len(scores)).permutation(len(scores))]
    want = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))[:k]
    assert top_k(ids, scores, k)[0] == [ids[i] for i in want]


@settings(max_examples=100, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(1, 5), st.integers(1, 30)),
              elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0])), st.integers(0, 32))
def test_top_k_rows_follows_the_same_rule_as_top_k(scores: np.ndarray, k: int) -> None:
    n = scores.shape[1]
    ids = np.random.default_rng(n).permutation(n).astype(np.int64)
    rows = top_k_rows(scores, k, ids)
    for r in range(scores.shape[0]):
        found, _ = top_k(ids.tolist(), scores[r], k)
        assert ids[rows[r]].tolist() == found


def test_top_k_rows_takes_one_id_row_per_score_row() -> None:
    scores = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0]])
    ids = np.array([[9, 4, 1], [7, 8, 3]])
    np.testing.assert_array_equal(top_k_rows(scores, 2, ids), [[1, 0], [2, 1]])
    np.testing.assert_array_equal(top_k_rows(scores, 1), [[0], [1]])  # default: by position


def test_cosine_pairs_is_the_diagonal_of_cosine_scores() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=(7, 12)).astype(np.float32)
    b = (rng.normal(size=(7, 12)) * 5).astype(np.float32)
    np.testing.assert_array_equal(cosine_pairs(a, b), np.diag(cosine_scores(a, b)))
    with pytest.raises(ValueError, match="differ"):
        cosine_pairs(a, b[:3])


def test_measured_tie_order_reorders_only_exact_ties_by_id_descending() -> None:
    ids = ["a", "c", "b", "x", "d", "f", "e"]
    scores = [0.9, 0.5, 0.5, 0.4, 0.3, 0.3, 0.3]
    order = measured_tie_order(ids, scores)
    assert order is not None and [ids[i] for i in order] == ["a", "c", "b", "x", "f", "e", "d"]
    assert ties_as_measured(list(zip(ids, scores))) == [
        ("a", 0.9), ("c", 0.5), ("b", 0.5), ("x", 0.4), ("f", 0.3), ("e", 0.3), ("d", 0.3)]
    # already so, no ties, or too short: nothing to do
    assert measured_tie_order(["b", "a"], [1.0, 1.0]) is None
    assert measured_tie_order(["a", "b"], [2.0, 1.0]) is None
    assert measured_tie_order([], []) is None and measured_tie_order(["a"], [1.0]) is None
    # a list whose scores rise keeps its order where they differ; equal scores apart stay apart
    assert measured_tie_order(["a", "b", "c"], [0.1, 0.5, 0.1]) is None
    # byte order of UTF-8, as trec_eval's strcmp: "é" (C3 A9) after "z" (7A)
    assert ties_as_measured([("z", 1.0), ("é", 1.0)]) == [("é", 1.0), ("z", 1.0)]
    with pytest.raises(ValueError, match="2 ids but 1 scores"):
        measured_tie_order(["a", "b"], [1.0])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=30),
       st.randoms(use_true_random=False))
def test_a_sorted_list_in_measured_tie_order_is_the_order_eval_ranks(
        values: list[float], rnd: random.Random) -> None:
    """A list sorted by score, whatever order its ties came in, ends in the order `eval` gives
    the same results: its reciprocal rank of each document is the one the measures compute."""
    ids = [f"d{i:02d}" for i in range(len(values))]
    rnd.shuffle(ids)
    hits = sorted(zip(ids, values), key=lambda h: -h[1])  # ties in a random order
    ranked = ties_as_measured(hits)
    run = Run.from_dict({"q": dict(hits)})
    for doc, _ in hits:
        res = evaluate(Qrels.from_dict({"q": {doc: 1}}), run, ["RR"])
        rank = next(i for i, (cid, _) in enumerate(ranked, 1) if cid == doc)
        assert float(res.per_query[res.measures[0]][0]) == 1.0 / rank
