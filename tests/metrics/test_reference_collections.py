"""The chapter's demonstration, and the real Cranfield collection with a BM25 run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from recallwatch.formats import cranfield
from recallwatch.metrics import Qrels, Run, evaluate

# The chapter's three rankings (src/cap18_evaluacion.py), verbatim: same relevant set {0, 1, 2}.
RANKINGS = {
    "ideal": [0, 1, 2, 9, 8, 7, 6, 5, 4, 3],
    "disperso": [0, 9, 8, 1, 7, 6, 2, 5, 4, 3],
    "tardio": [9, 8, 7, 6, 0, 1, 2, 5, 4, 3],
}


def _chapter(ranking: list[int], relevant: set[int], k: int) -> dict[str, float]:
    """The chapter's listing 18.1, transcribed."""
    recall = len(set(ranking[:k]) & relevant) / min(len(relevant), k)
    rr = next((1.0 / pos for pos, d in enumerate(ranking, 1) if d in relevant), 0.0)
    dcg = sum(1 / math.log2(p + 1) for p, d in enumerate(ranking[:k], 1) if d in relevant)
    ideal = sum(1 / math.log2(p + 1) for p in range(1, min(len(relevant), k) + 1))
    return {"Rcap@10": recall, "RR": rr, "nDCG@10": dcg / ideal}


def test_chapter_demonstration() -> None:
    qrels = Qrels.from_dict({name: {"0": 1, "1": 1, "2": 1} for name in RANKINGS})
    run = Run.from_ranked({name: [str(d) for d in docs] for name, docs in RANKINGS.items()})
    res = evaluate(qrels, run, ["Rcap@10", "RR", "nDCG@10"])
    got = {
        str(m): dict(zip(res.query_ids, np.round(v, 2).tolist(), strict=True))
        for m, v in res.per_query.items()
    }
    # the figures the chapter prints (figure 18.1 and its worked nDCG example)
    assert got["Rcap@10"] == {"ideal": 1.0, "disperso": 1.0, "tardio": 1.0}
    assert got["RR"] == {"ideal": 1.0, "disperso": 1.0, "tardio": 0.2}
    assert got["nDCG@10"] == {"ideal": 1.0, "disperso": 0.83, "tardio": 0.51}
    # and exactly what the chapter's own code computes
    for i, name in enumerate(res.query_ids):
        expected = _chapter(RANKINGS[name], {0, 1, 2}, 10)
        for m, values in res.per_query.items():
            assert values[i] == pytest.approx(expected[str(m)], abs=1e-12)


def test_from_ranked_keeps_the_callers_order() -> None:
    # ids chosen so that sorting by id (either direction) would change the ranking
    run = Run.from_ranked({"q": ["b", "c", "a"]})
    res = evaluate(Qrels.from_dict({"q": {"c": 1}}), run, ["RR"])
    assert res.aggregate[res.measures[0]] == 0.5


@pytest.fixture
def cranfield_bm25(
    cranfield_dir: Path,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    bm25s = pytest.importorskip("bm25s")
    docs = cranfield.read_documents(cranfield_dir / "cran.all.1400")
    queries = cranfield.read_queries(cranfield_dir / "cran.qry")
    qrels = cranfield.read_qrels(cranfield_dir / "cranqrel")
    doc_ids = list(docs)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(docs.values()), show_progress=False), show_progress=False)
    tokens = bm25s.tokenize([q.text for q in queries], show_progress=False)
    hits, scores = retriever.retrieve(tokens, k=100, show_progress=False)
    run = {
        q.query_id: {
            doc_ids[d]: float(np.float32(s)) for d, s in zip(hits[i], scores[i], strict=True)
        }
        for i, q in enumerate(queries)
    }
    return qrels, run


def test_cranfield_reader(cranfield_dir: Path) -> None:
    queries = cranfield.read_queries(cranfield_dir / "cran.qry")
    qrels = cranfield.read_qrels(cranfield_dir / "cranqrel")
    assert (
        len(queries) == 225
        and len(cranfield.read_documents(cranfield_dir / "cran.all.1400")) == 1400
    )
    # ids are not sequential in cran.qry; cranqrel numbers queries by position
    assert [q.original_id for q in queries[:4]] == ["001", "002", "004", "008"]
    assert [q.query_id for q in queries[:4]] == ["1", "2", "3", "4"]
    assert sorted(qrels, key=int) == [q.query_id for q in queries]
    assert sum(len(d) for d in qrels.values()) == 1837
    # code 1 (complete answer) is the highest grade; -1 is judged not relevant
    assert [cranfield.grade_of_code(c) for c in (1, 2, 3, 4, -1)] == [4, 3, 2, 1, 0]


def test_cranfield_bm25_matches_pytrec_eval(
    cranfield_bm25: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
) -> None:
    qrels, run = cranfield_bm25
    pairs = {
        "P@5": "P_5",
        "P@10": "P_10",
        "R@10": "recall_10",
        "R@100": "recall_100",
        "RR": "recip_rank",
        "nDCG": "ndcg",
        "nDCG@10": "ndcg_cut_10",
        "AP": "map",
        "AP@10": "map_cut_10",
        "Rprec": "Rprec",
        "Success@1": "success_1",
        "P(rel=3)@10": "P_10",
    }
    reference = pytrec_eval.RelevanceEvaluator(
        qrels,
        {
            "P.5,10",
            "recall.10,100",
            "recip_rank",
            "ndcg",
            "ndcg_cut.10",
            "map",
            "map_cut.10",
            "Rprec",
            "success.1",
        },
    ).evaluate(run)
    strict = pytrec_eval.RelevanceEvaluator(qrels, {"P.10"}, relevance_level=3).evaluate(run)
    res = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), list(pairs))
    assert len(res.query_ids) == 225 and not res.missing_from_run
    for measure in res.measures:
        source = strict if measure.rel == 3 else reference
        expected = [source[q][pairs[str(measure)]] for q in res.query_ids]
        np.testing.assert_allclose(res.per_query[measure], expected, rtol=0, atol=1e-12)
    assert 0.2 < res.aggregate[res.measures[7]] < 0.6  # a sane BM25 MAP on Cranfield
