"""Agreement with ranx where its definitions coincide with trec_eval's.

ranx differs in two conventions, so the comparison stays where both are defined the same:
it breaks score ties in its own order (not by document id), so scores here are distinct within a
query; and it does not score judged queries absent from the run, so every judged query is in the
run. ranx's `ndcg` uses the grade as gain (trec_eval's), `ndcg_burges` 2^grade - 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallwatch.metrics import Qrels, Run, evaluate
from tests.reference import reference_library

ranx = reference_library("ranx")

pytestmark = [
    # ranx's numba kernels warn on an internal uint64 -> int64 cast we cannot avoid (the message
    # may start with terminal colour codes)
    pytest.mark.filterwarnings("ignore:.*unsafe cast from uint64 to int64"),
    pytest.mark.slow,  # numba compiles ranx's kernels on first use: minutes on a busy machine
]

PAIRS = {
    "P@5": "precision@5",
    "R@5": "recall@5",
    "RR": "mrr",
    "RR@3": "mrr@3",
    "AP": "map",
    "AP@5": "map@5",
    "nDCG@5": "ndcg@5",
    "nDCG": "ndcg",
    "nDCG(dcg=exp-log2)@5": "ndcg_burges@5",
    "Rprec": "r-precision",
    "Success@3": "hit_rate@3",
}


@st.composite
def collections(draw: Any) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(draw(st.integers(1, 5))):
        docs = [
            f"d{i}"
            for i in draw(st.lists(st.integers(0, 20), min_size=1, max_size=12, unique=True))
        ]
        judged = draw(st.lists(st.sampled_from([*docs, "x1", "x2"]), min_size=1, unique=True))
        grades = [draw(st.integers(1, 3)) for _ in judged]  # ranx keeps relevant judgments only
        qrels[f"q{q}"] = dict(zip(judged, grades, strict=True))
        run[f"q{q}"] = {d: float(len(docs) - i) for i, d in enumerate(draw(st.permutations(docs)))}
    return qrels, run


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections())
def test_matches_ranx(data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]) -> None:
    qrels, run = data
    rq, rr = ranx.Qrels(qrels), ranx.Run(run)
    ranx.evaluate(rq, rr, list(PAIRS.values()))
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), list(PAIRS))
    for measure in res.measures:
        expected = [rr.scores[PAIRS[str(measure)]][q] for q in res.query_ids]
        np.testing.assert_allclose(
            res.per_query[measure], expected, rtol=0, atol=1e-9, err_msg=str(measure)
        )
