"""Click-model judgments: grades by cut points, the minimum-impressions rule, qrels that the
metrics read like any other, provenance, and agreement with human labels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recallwatch.errors import UsageError
from recallwatch.formats.trec import write_qrels
from recallwatch.judgments.click_models import ClickCounter, fit
from recallwatch.judgments.judgments import (
    agreement_with_qrels,
    grade,
    judgments_from_fit,
    provenance_path,
    read_qrels_grades,
    write_judged_qrels,
)
from recallwatch.metrics import Qrels, Run, evaluate
from recallwatch.online.simulate import make_collection, simulate_batches


def test_grades_follow_the_cut_points() -> None:
    values = np.array([0.0, 0.149, 0.15, 0.3, 0.35, 0.59, 0.6, 1.0])
    assert grade(values).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert grade(values, (0.1, 0.2, 0.3)).tolist() == [0, 1, 1, 3, 3, 3, 3, 3]
    for bad in [(0.3, 0.2, 0.5), (0.1, 0.2), (0.0, 0.5, 0.9), (0.1, 0.5, 1.0)]:
        with pytest.raises(UsageError, match="three increasing numbers"):
            grade(values, bad)


@pytest.fixture(scope="module")
def simulated() -> tuple[object, dict[str, dict[str, int]]]:
    col = make_collection(40, 20, seed=7, bias_scale=3.0)
    counter = ClickCounter()
    for b in simulate_batches(col, 30_000, seed=8):
        counter.add_encoded(b.queries, b.docs, b.clicks)
    names = [col.query_id(q) for q in range(col.n_queries)]
    docs = [col.doc_id(q, j) for q in range(col.n_queries) for j in range(col.docs_per_query)]
    return fit(counter.counts(query_names=names, doc_names=docs), "pbm"), col.qrels()


def test_minimum_impressions_rule(simulated: tuple[object, dict[str, dict[str, int]]]) -> None:
    fitted, _ = simulated
    counts = fitted.counts  # type: ignore[attr-defined]
    examined = fitted.effective_n  # type: ignore[attr-defined]
    for minimum in (1, 50, 400):
        judged = judgments_from_fit(fitted, min_impressions=minimum)  # type: ignore[arg-type]
        assert all(j.impressions is not None and j.impressions >= minimum
                   for j in judged.judgments)
        assert len(judged.judgments) + judged.unlabelled == counts.n_pairs
        shown = counts.impressions >= minimum
        assert len(judged.judgments) == int((shown & (examined >= 5)).sum())
        # every pair left out is counted under its reason, and the sparse ones are listed
        assert judged.left_out is not None and judged.too_sparse is not None
        assert sum(judged.left_out.values()) == judged.unlabelled
        assert len(judged.too_sparse) == int((shown & (examined < 5)).sum())
    first = judged.judgments[0]
    assert first.source == "click-model:pbm" and first.ci is not None
    assert first.ci[0] <= (first.relevance or 0) <= first.ci[1]


def test_no_label_from_pairs_never_examined() -> None:
    """Cascade users rarely reach deep results: a pair shown often but only far down has
    (almost) no examinations and must get no label, not grade 0."""
    col = make_collection(30, 20, seed=3, bias_scale=3.0)
    counter = ClickCounter(tails=True)
    for b in simulate_batches(col, 20_000, user="cascade", seed=4):
        counter.add_encoded(b.queries, b.docs, b.clicks)
    fitted = fit(counter.counts(), "dbn")
    judged = judgments_from_fit(fitted, min_impressions=10)
    assert judged.too_sparse, "the simulation shows some pairs only where nobody looks"
    assert all((j.effective_n or 0.0) >= 5 for j in judged.judgments)
    sparse = {(r["query_id"], r["id"]) for r in judged.too_sparse}
    assert not sparse & set(judged.grades())
    assert all(r["impressions"] >= 10 and r["effective_examinations"] < 5
               for r in judged.too_sparse)
    with pytest.raises(UsageError, match="examinations must be > 0"):
        judgments_from_fit(fitted, min_examinations=0)


def test_qrels_are_used_by_the_metrics_and_agree_with_the_truth(
        tmp_path: Path, simulated: tuple[object, dict[str, dict[str, int]]]) -> None:
    fitted, truth = simulated
    judged = judgments_from_fit(fitted)  # type: ignore[arg-type]
    out = tmp_path / "clicks.qrels"
    sidecar = write_judged_qrels(out, judged, {"log": {"sha256": "abc"}})
    assert sidecar == provenance_path(out)
    meta = json.loads(sidecar.read_text())
    assert meta["source"] == "click-model:pbm" and meta["labels"] == len(judged.judgments)
    assert meta["log"] == {"sha256": "abc"}
    # the metrics read click labels like any other judgments
    qrels = Qrels.from_trec(out)
    ideal = {q: {d: float(g) for d, g in docs.items()} for q, docs in truth.items()}
    result = evaluate(qrels, Run.from_dict(ideal), ["nDCG@10"])
    # ranking by the true grade is near-ideal on the click labels too
    assert result.to_json()["aggregate"]["nDCG@10"] > 0.9
    # agreement with the true grades, through a qrels file as a person would give them
    human = tmp_path / "human.qrels"
    pairs = [(q, d, g) for q, docs in truth.items() for d, g in docs.items()]
    write_qrels(human, [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs])
    measured = agreement_with_qrels(judged.grades(), read_qrels_grades(human))
    assert measured is not None and measured.n == len(judged.judgments)
    assert measured.kappa > 0.8
    # and none in common gives None
    assert agreement_with_qrels(judged.grades(), {("zz", "zz"): 1}) is None


def test_writing_twice_gives_identical_bytes(
        tmp_path: Path, simulated: tuple[object, dict[str, dict[str, int]]]) -> None:
    fitted, _ = simulated
    judged = judgments_from_fit(fitted)  # type: ignore[arg-type]
    for name in ("a", "b"):
        write_judged_qrels(tmp_path / name / "x.qrels", judged, {"settings": {"k": 1}})
    for suffix in ("x.qrels", "x.qrels.provenance.json"):
        assert (tmp_path / "a" / suffix).read_bytes() == (tmp_path / "b" / suffix).read_bytes()
