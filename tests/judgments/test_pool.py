"""Pooling on real data: BM25 over Cranfield with its human judgments left out, and the example
knowledge base's store and corpus pooled together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallwatch.errors import InputError, UsageError
from recallwatch.formats import cranfield
from recallwatch.formats.judging import read_queue
from recallwatch.formats.trec import write_qrels
from recallwatch.judgments.pool import (
    PoolQuery,
    bm25_rankings,
    build_pool,
    load_pool_queries,
    pool_from_files,
    write_pool,
)

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
N_QUERIES = 25  # the first 25 Cranfield queries keep the test quick


@pytest.fixture(scope="module")
def cran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tests.conftest import CRANFIELD

    if not (CRANFIELD / "cranqrel").exists():
        pytest.skip(f"Cranfield collection not found at {CRANFIELD}")
    tmp = tmp_path_factory.mktemp("cran")
    docs = cranfield.read_documents(CRANFIELD / "cran.all.1400")
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in docs.items()
                              if t), encoding="utf-8")
    queries = cranfield.read_queries(CRANFIELD / "cran.qry")[:N_QUERIES]
    qfile = tmp / "queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": q.query_id, "text": q.text}) + "\n"
                             for q in queries), encoding="utf-8")
    qrels = cranfield.read_qrels(CRANFIELD / "cranqrel")
    rows = [(q, d, g) for q, dg in qrels.items() for d, g in dg.items()]
    qfile_qrels = tmp / "cran.qrels"
    write_qrels(qfile_qrels, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    return {"corpus": corpus, "queries": qfile, "qrels": qfile_qrels, "tmp": tmp}


def test_cranfield_pool_is_bm25_top_minus_the_human_judgments(cran: dict[str, Path]) -> None:
    pool, provenance = pool_from_files(cran["queries"], bm25=cran["corpus"], depth=20,
                                       judgments=[cran["qrels"]])
    from tests.conftest import CRANFIELD

    judged = {(q, d) for q, dg in cranfield.read_qrels(CRANFIELD / "cranqrel").items()
              for d in dg}
    queue = {i.pair for i in pool.items}
    assert not queue & judged  # nothing judged is asked again
    # every unjudged pair of BM25's top 20 is in the queue, and nothing else is
    qs = load_pool_queries(cran["queries"])
    from recallwatch.formats.corpus import read_corpus

    top = bm25_rankings(qs, list(read_corpus(cran["corpus"])), 20)
    expected = {(q, d) for q, ids in top.items() for d in ids[:20]} - judged
    assert queue == expected
    assert pool.already_judged == len({(q, d) for q, ids in top.items() for d in ids} & judged)
    # BM25 on Cranfield finds judged documents high: most queries have one in their top 20
    # (keyword search is a strong baseline on this collection)
    hit = {q for q, ids in top.items() if any((q, d) in judged for d in ids)}
    assert len(hit) >= 0.8 * N_QUERIES
    assert provenance["systems"]["bm25"]["hash"] and provenance["depth"] == 20
    # text and the system's rank travel with each pair, best rank first within a query
    first = pool.items[0]
    assert first.text and first.found_by["bm25"] >= 1
    ranks = [i.found_by["bm25"] for i in pool.items if i.query_id == first.query_id]
    assert ranks == sorted(ranks)


def test_cranfield_pool_with_a_results_file_is_the_union(cran: dict[str, Path]) -> None:
    # a second system: BM25 over titles only (the first sentence), written as a results file
    docs = [json.loads(line) for line in cran["corpus"].read_text().splitlines()]
    titles = cran["tmp"] / "titles.jsonl"
    titles.write_text("".join(json.dumps({"id": d["id"], "text": d["text"].split(". ")[0]})
                              + "\n" for d in docs), encoding="utf-8")
    from recallwatch.formats.corpus import read_corpus

    qs = load_pool_queries(cran["queries"])
    other = bm25_rankings(qs, list(read_corpus(titles)), 10)
    results = cran["tmp"] / "titles-run.jsonl"
    results.write_text("".join(json.dumps({"query_id": q, "results": [
        {"id": d, "score": 10 - r} for r, d in enumerate(ids)]}) + "\n"
        for q, ids in other.items()), encoding="utf-8")
    pool, _ = pool_from_files(cran["queries"], bm25=cran["corpus"], results=[results],
                              depth=10)
    base = bm25_rankings(qs, list(read_corpus(cran["corpus"])), 10)
    union = {(q, d) for r in (base, other) for q, ids in r.items() for d in ids}
    assert {i.pair for i in pool.items} == union  # nothing judged: the whole union
    both = [i for i in pool.items if len(i.found_by) == 2]
    assert both and all(set(i.found_by) == {"bm25", "titles-run"} for i in both)
    assert pool.only_by["bm25"] + pool.only_by["titles-run"] + len(both) == len(pool.items)
    # pairs found by both systems come before pairs of the same best rank found by one
    assert pool.per_system == {"bm25": sum(len(v) for v in base.values()),
                               "titles-run": sum(len(v) for v in other.values())}


def test_golden_expected_chunks_count_as_judged_and_texts_come_from_the_corpus(
        tmp_path: Path) -> None:
    pool, prov = pool_from_files(KB / "golden.yaml", bm25=KB / "corpus_v1.jsonl", depth=5)
    from recallwatch.formats.golden import load_golden

    golden = load_golden(KB / "golden.yaml")
    expected = {(q.id, c) for q in golden.queries for c in q.expected}
    assert not {i.pair for i in pool.items} & expected
    assert pool.already_judged > 0 and pool.without_text == 0
    corpus = {json.loads(x)["id"]: json.loads(x) for x in
              (KB / "corpus_v1.jsonl").read_text(encoding="utf-8").splitlines()}
    item = pool.items[0]
    assert item.text == (corpus[item.id].get("content") or corpus[item.id]["text"])
    assert item.meta["doc_id"] == corpus[item.id]["doc_id"]
    sidecar = write_pool(tmp_path / "q.jsonl", pool, prov)
    assert read_queue(tmp_path / "q.jsonl") == pool.items
    assert json.loads(sidecar.read_text())["pool"]["queue"] == len(pool.items)


def test_build_pool_orders_by_best_rank_then_agreement() -> None:
    qs = [PoolQuery("a", "x"), PoolQuery("b", "y", expected=("c1",))]
    systems = {"s1": {"a": ["d1", "d2", "d3"], "b": ["c1", "c2"]},
               "s2": {"a": ["d3", "d2"], "b": ["c2"]}}
    pool = build_pool(qs, systems, 3, judged=[("a", "d1")])
    assert [i.pair for i in pool.items] == [("a", "d3"), ("a", "d2"), ("b", "c2")]
    assert pool.items[0].found_by == {"s1": 3, "s2": 1}
    assert pool.already_judged == 2  # a/d1 by the judgments, b/c1 by the golden set
    with pytest.raises(UsageError):
        build_pool(qs, {}, 3)
    with pytest.raises(UsageError):
        build_pool(qs, systems, 0)


def test_bad_queries_file_is_one_located_error(tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "q1", "text": "ok"}\n{"id": "q2"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"q\.jsonl:2: record 'q2': field 'text'"):
        load_pool_queries(bad)
