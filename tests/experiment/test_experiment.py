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

from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.golden import load_golden
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
    first = cli("experiment", str(folder / "plan.yaml"), "--out-dir", str(out))
    assert first[0] == 0, first[2]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    second = cli("experiment", str(folder / "plan.yaml"), "--out-dir", str(out))
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
                                     "mean_fact_recall", "judged_at_k"}
        assert 0.0 <= v["metrics"]["judged_at_k"] <= 1.0
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
    choice = r["choice"]
    assert set(choice["order"]) == set(by_name) and choice["chosen_on"] == "tune"
    if r["winner"] == r["base"]:  # no variant beat the base with evidence: it is kept
        assert choice["candidate"] is None or r["confirmed"] is False
    else:  # the winner beat the base on tune and was confirmed on test
        assert r["winner"] in choice["beat_base"] and r["confirmed"] is True
        assert choice["tune_tests"][r["winner"]][choice["won_on"][r["winner"]]]["p_holm"] <= 0.05
    for v in r["variants"]:
        assert isinstance(v["dominated_by"], list) and v["choice"]
        calls = v["cost"]["side_by_side"]["calls"]  # 3 rounds of the same queries for each
        assert calls == r["variants"][0]["cost"]["side_by_side"]["calls"] and calls % 3 == 0


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
    assert re.search(r"^variant +choice +verdict +quality +recall@K .* judged@K .* dominated by$",
                     stdout, flags=re.M)
    assert "judged@K: the share of the top K that is labelled" in stdout
    assert "| variant | choice | verdict | quality |" in (out / "results.md").read_text(
        encoding="utf-8")
    results = runs["results"]
    verdict = (f"no variant beat the base: keep it ({results['base']})"
               if results["winner"] == results["base"] else f"winner: {results['winner']}")
    assert verdict in stdout
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
    code, stdout, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir",
                               str(tmp_path / "out"))
    assert code == 0, stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["chosen_on"] == "all" and results["confirmed"] is None
    assert any("chosen and judged on the same queries" in w for w in results["warnings"])
    assert "chosen and judged on the same queries" in stdout


def _labelled_share(gate: dict[str, Any]) -> dict[str, float]:
    """judged@K written out from a gate's JSON: the share of each top K that is an expected chunk
    or a chunk one of the query's content anchors resolves to."""
    out = {}
    for q in gate["queries"]:
        labelled = {e["id"] for e in q["expected"]} | {
            c for a in q["anchors"] for c in a["chunks"]}
        top = [t["id"] for t in q["top"]]
        out[q["id"]] = sum(c in labelled for c in top) / len(top)
    return out


@pytest.mark.slow  # the runs fixture: five variants built and judged, twice
def test_judged_at_k_is_the_labelled_share_of_each_top_k(runs: dict[str, Any]) -> None:
    folder, out = runs["folder"], runs["out"]
    by_name = {v["name"]: v for v in runs["results"]["variants"]}
    (index,) = (out / "cache").glob("index-*")
    written = out / "cache" / f"corpus-{by_name['bm25']['build']['corpus_key']}"
    (chunks,) = written.parent.glob(written.name + "*/chunks.jsonl")
    pipeline = folder / "bm25.yaml"
    pipeline.write_text(f"retrievers:\n  bm25: 'bm25:{chunks}'\n", encoding="utf-8")
    for name, source in (("dense", ["--store", f"lancedb://{index / 'db'}?table=chunks"]),
                         ("bm25", ["--pipeline", str(pipeline)])):
        code, stdout, stderr = cli("gate", str(folder / "golden.yaml"), *source, "--policy",
                                   str(folder / "policy.yaml"), "--no-history", "--format",
                                   "json")
        assert code in (0, 1), stderr
        share = _labelled_share(json.loads(stdout))
        variant = by_name[name]
        assert {q: row["judged"] for q, row in variant["per_query"].items()} == pytest.approx(
            share)
        assert variant["metrics"]["judged_at_k"] == pytest.approx(
            sum(share.values()) / len(share))
        assert 0.0 < variant["metrics"]["judged_at_k"] < 1.0  # some of each top K is unlabelled


def test_judgments_count_and_a_judged_at_k_gap_is_warned(tmp_path: Path) -> None:
    small_kb(tmp_path)
    corpus = read_corpus(tmp_path / "corpus.jsonl").chunks
    queries = load_golden(tmp_path / "golden.yaml").queries
    plan = ("golden: golden.yaml\ncorpus: corpus.jsonl\npolicy: policy.yaml\n{judgments}"
            "base: {{name: bm25, retrieval: bm25}}\nvariants:\n"
            "  - {{name: sentences, chunking: {{method: sentences, size: 120}}, "
            "retrieval: bm25}}\n")
    (tmp_path / "plan.yaml").write_text(plan.format(judgments=""), encoding="utf-8")
    code, _, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir",
                          str(tmp_path / "a"))
    assert code == 0, stderr
    before = json.loads((tmp_path / "a" / "results.json").read_text(encoding="utf-8"))
    # every (query, chunk as written) pair judged (TREC qrels, grade 0): the written chunking's
    # top K is all labelled; the sentence chunks have other ids, so theirs is as it was
    (tmp_path / "all.qrels").write_text("".join(f"{q.id} 0 {c.id} 0\n" for q in queries
                                                for c in corpus), encoding="utf-8")
    (tmp_path / "plan.yaml").write_text(plan.format(judgments="judgments: all.qrels\n"),
                                        encoding="utf-8")
    code, stdout, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir",
                               str(tmp_path / "b"))
    assert code == 0, stderr
    after = json.loads((tmp_path / "b" / "results.json").read_text(encoding="utf-8"))
    judged = {v["name"]: v["metrics"]["judged_at_k"] for v in after["variants"]}
    assert judged["bm25"] == 1.0
    assert judged["sentences"] == before["variants"][1]["metrics"]["judged_at_k"] < 0.8
    assert before["variants"][0]["metrics"]["judged_at_k"] < 1.0
    warned = [w for w in after["warnings"] if w.startswith("judged@K")]
    assert len(warned) == 1
    assert f"1.00 for bm25 but {judged['sentences']:.2f} for sentences" in warned[0]
    # the warning says where the little-judged variant ranked, as the results rank it
    ranked = sorted(after["variants"], key=lambda v: (
        *(-(v["metrics"][m] or 0.0) for m in ("mean_quality", "mean_ndcg", "mrr")),
        after["variants"].index(v)))
    place = [v["name"] for v in ranked].index("sentences") + 1
    said = ("sentences ranked 1st of 2 even so" if place == 1
            else "sentences ranked 2nd of 2, and may deserve better")
    assert f"so those of a little-judged variant are lower bounds: {said}. " in warned[0]
    assert ranked[0]["name"] == after["winner"]
    assert "judged@K (the share of each variant's top K" in stdout


def test_the_judged_at_k_warning_names_the_place_each_little_judged_variant_took() -> None:
    from recallwatch.experiment.evaluate import PartResult, VariantOutcome
    from recallwatch.experiment.runner import _judged_warning

    def outcome(name: str, judged: float) -> VariantOutcome:
        part = PartResult("ACCEPT", {"judged_at_k": judged}, {}, 0, None, None)
        return VariantOutcome(name, {}, {}, {"all": part}, None, None, 0.0)

    variants = [outcome("base", 1.0), outcome("bm25", 0.5), outcome("hybrid", 0.6)]
    (warned,) = _judged_warning(variants, "all", ["bm25", "base", "hybrid"])
    assert ("lower bounds: bm25 ranked 1st of 3 even so; hybrid ranked 3rd of 3, and may "
            "deserve better. Pool their results") in warned
    assert "may rank low" not in warned
    assert _judged_warning([variants[0], outcome("close", 0.85)], "all", ["base", "close"]) \
        == []


def test_a_bad_judgments_file_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    small_kb(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"query_id": "q1", "id": "c1", "grade": 7}\n',
                                        encoding="utf-8")
    (tmp_path / "plan.yaml").write_text(
        "golden: golden.yaml\ncorpus: corpus.jsonl\njudgments: bad.jsonl\n"
        "base: {name: bm25, retrieval: bm25}\n", encoding="utf-8")
    code, _, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir",
                          str(tmp_path / "o"))
    assert code == 2
    assert "bad.jsonl" in stderr and "grade" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "o" / "cache").exists() or not any((tmp_path / "o" / "cache").iterdir())


@pytest.mark.slow  # torch and a model (about 30 s alone; minutes on a loaded machine)
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_a_cross_encoder_variant_is_judged_as_the_gate_judges_its_pipeline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan's `rerank: {cross_encoder: PATH}` on a tiny cross-encoder built and saved here
    (random weights: it reranks, it does not know Spanish; nothing downloads)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    small_kb(tmp_path)
    model = tmp_path / "ce"
    words = sorted({w.lower() for c in read_corpus(tmp_path / "corpus.jsonl").chunks
                    for w in re.findall(r"\w+", c.text)})
    model.mkdir()
    (model / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n",
        encoding="utf-8")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=5 + len(words), hidden_size=16,
                                     num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=512,
                                     num_labels=1)
    transformers.BertForSequenceClassification(config).save_pretrained(model)
    transformers.BertTokenizer(str(model / "vocab.txt"), do_lower_case=True).save_pretrained(model)
    (tmp_path / "plan.yaml").write_text(
        "golden: golden.yaml\ncorpus: corpus.jsonl\npolicy: policy.yaml\ndepth: 20\n"
        "base: {name: bm25, retrieval: bm25}\nvariants:\n"
        "  - {name: bm25-ce, rerank: {cross_encoder: ce}}\n", encoding="utf-8")
    code, _, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir",
                          str(tmp_path / "o"))
    assert code == 0, stderr
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    variant = results["variants"][1]
    assert variant["config"]["rerank"] == {"cross_encoder": "ce"}
    (chunks,) = (tmp_path / "o" / "cache").glob("corpus-*/chunks.jsonl")
    (tmp_path / "pipeline.yaml").write_text(
        f"retrievers:\n  bm25: 'bm25:{chunks}'\ndepth: 20\n"
        f"rerank: {{cross_encoder: '{model}'}}\n", encoding="utf-8")
    code, stdout, stderr = cli("gate", str(tmp_path / "golden.yaml"), "--pipeline",
                               str(tmp_path / "pipeline.yaml"), "--policy",
                               str(tmp_path / "policy.yaml"), "--no-history", "--format", "json")
    assert code in (0, 1), stderr
    gate = json.loads(stdout)
    assert gate["config"]["pipeline"]["reranker"]["kind"] == "cross-encoder"
    assert gate["verdict"] == variant["verdict"]
    assert {q["id"]: q["ndcg"] for q in gate["queries"]} == pytest.approx(
        {q: row["ndcg"] for q, row in variant["per_query"].items()})
    # the same first stage: the reranker reorders BM25's candidates, it finds no others
    assert variant["candidate_recall"] is not None
    assert variant["candidate_recall"] == pytest.approx(
        results["variants"][0]["candidate_recall"])
