"""`recallwatch experiment` on part of the example knowledge base: dense, BM25, hybrid, a
re-chunking and a reranker; the base judged as the gate judges it; p-values and Holm checked
against scipy and the procedure written out; a rerun builds nothing and gives the same numbers.

Those checks share one experiment run twice (about a minute and a half): they are marked slow.
The default suite runs a two-variant experiment end to end
(``test_without_a_split_the_winner_is_judged_on_the_queries_it_was_chosen_on``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan

VARIANTS = [
    "{name: bm25, retrieval: bm25}",
    "{name: hybrid, retrieval: {fuse: {method: rrf, k: 60}}}",
    "{name: sentences-bm25, chunking: {method: sentences, size: 200}, retrieval: bm25}",
    '{name: hybrid-reranked, retrieval: {fuse: {method: rrf}}, rerank: {python: "rerank:overlap"}}',
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("experiment")
    small_kb(folder)
    write_plan(folder, "{name: dense}", VARIANTS)
    out = folder / "out"
    first = cli("experiment", str(folder / "plan.yaml"), "--out", str(out))
    assert first[0] == 0, first[2]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    second = cli("experiment", str(folder / "plan.yaml"), "--out", str(out))
    assert second[0] == 0, second[2]
    again = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return {"folder": folder, "out": out, "first": first, "results": results, "again": again}


@pytest.mark.slow  # the runs fixture: five variants built and judged, twice
def test_results_json_contract(runs: dict[str, Any]) -> None:
    r = runs["results"]
    assert {"variants", "base", "winner", "chosen_on"} <= set(r)
    assert r["base"] == "dense" and r["chosen_on"] == "tune" and r["judged_on"] == "test"
    assert [v["name"] for v in r["variants"]] == ["dense", "bm25", "hybrid", "sentences-bm25",
                                                  "hybrid-reranked"]
    for v in r["variants"]:
        assert {"name", "config", "metrics", "cost", "vs_base"} <= set(v)
        assert set(v["metrics"]) == {"mean_quality", "mean_recall", "mean_ndcg", "mrr",
                                     "mean_fact_recall"}
        assert {"ingest_seconds", "store_bytes", "search_p50_ms", "search_p99_ms"} <= set(
            v["cost"])
        assert v["verdict"] in ("ACCEPT", "STOP")
        if v["name"] != "dense":
            for metric, test in v["vs_base"].items():
                assert metric in v["metrics"]
                assert {"delta", "p", "p_holm"} <= set(test)
    by_name = {v["name"]: v for v in r["variants"]}
    assert by_name["bm25"]["config"]["retrieval"] == "bm25"
    assert by_name["bm25"]["cost"]["ingest_seconds"] is None  # BM25 alone builds no index
    assert by_name["hybrid"]["config"]["fuse"] == {"method": "rrf", "k": 60}
    assert by_name["sentences-bm25"]["config"]["chunking"] == {
        "method": "sentences", "size": 200, "overlap": 0}
    assert r["winner"] in by_name
    tune = {v["name"]: v["metrics_tune"]["mean_quality"] for v in r["variants"]}
    assert tune[r["winner"]] == max(tune.values())  # chosen on tune


@pytest.mark.slow  # the runs fixture: five variants built and judged, twice
def test_the_base_is_judged_as_the_gate_judges_it(runs: dict[str, Any]) -> None:
    folder, out = runs["folder"], runs["out"]
    (index,) = (out / "cache").glob("index-*")
    code, stdout, stderr = cli("gate", str(folder / "golden.yaml"), "--store",
                               f"lancedb://{index / 'db'}?table=chunks", "--policy",
                               str(folder / "policy.yaml"), "--no-history", "--format", "json")
    assert code in (0, 1), stderr
    gate = json.loads(stdout)
    base = runs["results"]["variants"][0]
    assert gate["verdict"] == base["verdict"]
    assert gate["aggregate"]["mean_quality"] == pytest.approx(base["metrics"]["mean_quality"])
    assert gate["aggregate"]["mean_ndcg"] == pytest.approx(base["metrics"]["mean_ndcg"])
    assert {q["id"]: q["quality"] for q in gate["queries"]} == pytest.approx(
        {q: row["quality"] for q, row in base["per_query"].items()})


@pytest.mark.slow  # the runs fixture: five variants built and judged, twice
def test_p_values_are_exact_permutation_tests_and_holm_is_across_variants(
        runs: dict[str, Any]) -> None:
    variants = runs["results"]["variants"]
    base = variants[0]["per_query"]
    qids = sorted(base)
    for metric, fieldname in (("mean_ndcg", "ndcg"), ("mrr", "rr")):
        raw = []
        for v in variants[1:]:
            d = np.array([v["per_query"][q][fieldname] - base[q][fieldname] for q in qids])
            test = v["vs_base"][metric]
            assert test["delta"] == pytest.approx(d.mean())
            assert 2 <= d.size <= 13  # every sign assignment is enumerated, here and in scipy
            if np.all(np.abs(d) < 1e-12):
                assert test["p"] == 1.0
            else:
                ref = stats.permutation_test(
                    (d,), np.mean, permutation_type="samples",
                    n_resamples=np.inf, alternative="two-sided").pvalue
                assert test["p"] == pytest.approx(ref)
            raw.append(test["p"])
        # Holm across the four variants, written out
        order = np.argsort(raw, kind="stable")
        expected, running = [0.0] * len(raw), 0.0
        for step, i in enumerate(order):
            running = max(running, min(1.0, (len(raw) - step) * raw[i]))
            expected[i] = running
        assert [v["vs_base"][metric]["p_holm"] for v in variants[1:]] == pytest.approx(expected)


@pytest.mark.slow  # the runs fixture: five variants built and judged, twice
def test_a_rerun_builds_nothing_and_gives_the_same_numbers(runs: dict[str, Any]) -> None:
    first, again = runs["results"], runs["again"]
    assert first["cache"]["built"] == {"corpus": ["dense", "sentences-bm25"], "index": ["dense"]}
    assert again["cache"]["built"] == {"corpus": [], "index": []}
    assert again["cache"]["reused"]["index"] == ["dense", "hybrid", "hybrid-reranked"]
    for a, b in zip(first["variants"], again["variants"], strict=True):
        assert (a["metrics"], a["vs_base"], a["per_query"]) == (
            b["metrics"], b["vs_base"], b["per_query"])
    assert first["winner"] == again["winner"]


@pytest.mark.slow  # the runs fixture: five variants built and judged, twice
def test_outputs_for_people(runs: dict[str, Any]) -> None:
    _, stdout, stderr = runs["first"]
    out = runs["out"]
    assert re.search(r"^variant +verdict +quality +recall@K", stdout, flags=re.M)
    assert "| variant | verdict | quality |" in (out / "results.md").read_text(encoding="utf-8")
    assert f"winner: {runs['results']['winner']}, chosen on the tune queries" in stdout
    assert "index builds: 1 built, 2 from the cache" in stdout
    assert f"wrote {out / 'report.html'}" in stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html and "Quality against cost" in html
    assert re.search(r"<script>", html) and "Content-Security-Policy" in html
    assert (out / "results.md").read_text(encoding="utf-8").count("\n| ") == 6


def test_without_a_split_the_winner_is_judged_on_the_queries_it_was_chosen_on(
        tmp_path: Path) -> None:
    small_kb(tmp_path, split=False)
    (tmp_path / "plan.yaml").write_text(
        "golden: golden.yaml\ncorpus: corpus.jsonl\npolicy: policy.yaml\n"
        "base: {name: bm25, retrieval: bm25}\n"
        "variants:\n  - {name: bm25-sentences, chunking: {method: sentences, size: 1}}\n",
        encoding="utf-8")
    code, stdout, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out",
                               str(tmp_path / "out"))
    assert code == 0, stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["chosen_on"] == "all" and results["confirmed"] is None
    assert any("chosen and judged on the same queries" in w for w in results["warnings"])
    assert "chosen and judged on the same queries" in stdout
