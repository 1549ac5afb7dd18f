"""Real data: BM25 on Cranfield, title-only (A) against full text (B), compared end to end and
checked against pytrec_eval's per-query values and scipy's tests."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from recallwatch.metrics import Qrels, Run
from recallwatch.stats import compare, paired_test


def _records(text: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for block in re.split(r"^\.I ", text, flags=re.M)[1:]:
        rid, rest = block.split("\n", 1)
        fields = dict(re.findall(r"^\.([A-Z])\n(.*?)(?=^\.[A-Z]\n|\Z)", rest, flags=re.M | re.S))
        out.append((rid.strip(), fields))
    return out


@pytest.fixture(scope="module")
def cranfield(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import bm25s

    from tests.conftest import CRANFIELD

    if not (CRANFIELD / "cranqrel").exists():
        pytest.skip(f"Cranfield collection not found at {CRANFIELD} (not copied into the repo)")
    out = tmp_path_factory.mktemp("cranfield")
    docs = _records((CRANFIELD / "cran.all.1400").read_text())
    queries = _records((CRANFIELD / "cran.qry").read_text())
    # cranqrel numbers the queries 1..225 in file order; cran.qry's own ids skip numbers.
    qids = [str(i) for i in range(1, len(queries) + 1)]
    lines = []
    for line in filter(str.strip, (CRANFIELD / "cranqrel").read_text().splitlines()):
        qid, doc, code = line.split()[:3]
        grade = 5 - int(code) if 1 <= int(code) <= 4 else 0  # code 1 = complete answer
        lines.append(f"{qid} 0 {doc} {grade}\n")
    (out / "qrels").write_text("".join(lines))
    for name, fields in (("title", ("T",)), ("full", ("T", "W"))):
        retriever = bm25s.BM25()
        corpus = [" ".join(f.get(k, "") for k in fields) for _, f in docs]
        retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False),
                        show_progress=False)
        found, scores = retriever.retrieve(
            bm25s.tokenize([f.get("W", "") for _, f in queries], stopwords="en",
                           show_progress=False), k=100, show_progress=False)
        (out / name).write_text("".join(
            f"{qid} Q0 {docs[d][0]} {r} {s:.6f} {name}\n"
            for qi, qid in enumerate(qids)
            for r, (d, s) in enumerate(zip(found[qi], scores[qi], strict=True), 1)))
    return out


def _trec_eval(path: Path) -> dict[str, dict[str, float]]:
    import pytrec_eval

    with open(path.parent / "qrels") as qf, open(path) as rf:
        qrels = pytrec_eval.parse_qrel(qf)
        run = pytrec_eval.parse_run(rf)
    return pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map"}).evaluate(run)


def test_full_text_beats_titles_with_pytrec_evals_numbers(cranfield: Path) -> None:
    result = compare(Qrels.from_trec(cranfield / "qrels"), Run.from_trec(cranfield / "title"),
                     Run.from_trec(cranfield / "full"), ["nDCG@10", "AP"], test="t")
    ref_a, ref_b = _trec_eval(cranfield / "title"), _trec_eval(cranfield / "full")
    ids = sorted(ref_a, key=int)
    assert len(result.query_ids) == len(ids) == 225
    for measure, key in (("nDCG@10", "ndcg_cut_10"), ("AP", "map")):
        a = np.array([ref_a[q][key] for q in ids])
        b = np.array([ref_b[q][key] for q in ids])
        row = result[measure]
        assert row.mean_a == pytest.approx(a.mean(), abs=1e-6)
        assert row.mean_b == pytest.approx(b.mean(), abs=1e-6)
        assert row.p_value == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-4)
        assert row.delta > 0 and row.ci.low > 0 and row.p_holm <= 0.05
        # The randomization test on pytrec_eval's values tells the same story.
        assert paired_test(a, b, seed=0).p_value <= 0.01
