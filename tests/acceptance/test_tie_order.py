"""One ranking, one MRR: where two chunks have exactly the same score (the same text ingested
twice), the gate orders them as `recallwatch eval` orders a run file (id descending, trec_eval's
rule), so the gate's figures and eval's on the gate's own run files are the same numbers; a
results file keeps the order the user's system gave, and the gate says when eval would differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import cli

TEXT = "Las vacaciones anuales son de treinta días naturales por año trabajado."
TEXTS = {
    # the same passage twice, under two ids: identical vectors, exactly equal scores
    "vac_a": TEXT,
    "vac_b": TEXT,
    "sal": "El salario se abona el último día hábil de cada mes por transferencia.",
    "jor": "La jornada ordinaria es de cuarenta horas semanales de trabajo efectivo.",
    "iva": "El IVA trimestral se declara con el modelo 303 en los veinte primeros días.",
}
QUERIES = {
    "q_vac": ("¿Cuántos días de vacaciones tengo al año?", ["vac_a"]),
    "q_jor": ("¿Cuántas horas semanales es la jornada ordinaria?", ["jor", "vac_a"]),
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from recallwatch.embedders import get_embedder
    from recallwatch.ops.ingest import ingest
    from recallwatch.stores import open_store

    path = tmp_path_factory.mktemp("ties")
    corpus = path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": t, "doc_id": f"doc_{i}"}) + "\n"
                              for i, t in TEXTS.items()), encoding="utf-8")
    store = open_store(_uri(path), create=True)
    try:
        ingest(corpus, store, get_embedder(), embedder_spec="use-multilingual")
    finally:
        store.close()
    (path / "golden.yaml").write_text(json.dumps({"name": "ties", "top_k": 3, "queries": [
        {"id": q, "text": t, "expected": e} for q, (t, e) in QUERIES.items()]},
        ensure_ascii=False), encoding="utf-8")
    (path / "golden.qrels").write_text("".join(f"{q} 0 {c} 1\n" for q, (_, e) in QUERIES.items()
                                               for c in e), encoding="utf-8")
    (path / "pipeline.yaml").write_text(f'retrievers:\n  dense: "{_uri(path)}"\ndepth: 5\n',
                                        encoding="utf-8")
    return path


def _uri(path: Path) -> str:
    return f"lancedb://{path / 'db'}?table=chunks"


def _gate(*args: str) -> dict[str, object]:
    code, out, err = cli("gate", *args, "--no-history", "--format", "json")
    assert code in (0, 1), err
    result: dict[str, object] = json.loads(out)
    return result


def _eval(qrels: Path, run: Path, *measures: str) -> dict[str, dict[str, float]]:
    args = [x for m in measures for x in ("-m", m)]
    code, out, err = cli("eval", str(qrels), str(run), *args, "--per-query", "--format", "json")
    assert code == 0, err
    per_query: dict[str, dict[str, float]] = json.loads(out)["per_query"]
    return per_query


def test_the_gate_and_eval_of_its_run_file_give_one_mrr(kb: Path, tmp_path: Path) -> None:
    store = _gate(str(kb / "golden.yaml"), "--store", _uri(kb))
    piped = _gate(str(kb / "golden.yaml"), "--pipeline", str(kb / "pipeline.yaml"),
                  "--runs-out", str(tmp_path / "runs"))
    evaluated = _eval(kb / "golden.qrels", tmp_path / "runs" / "fused.run", "RR", "nDCG@3")
    for result in (store, piped):
        queries = {q["id"]: q for q in result["queries"]}  # type: ignore[attr-defined]
        vac = queries["q_vac"]
        # vac_a and vac_b tie exactly: ranked as eval ranks them, vac_b (the larger id) first
        assert [t["id"] for t in vac["top"][:2]] == ["vac_b", "vac_a"]
        assert vac["top"][0]["score"] == vac["top"][1]["score"]
        assert vac["expected"][0]["rank"] == 2 and vac["rr"] == 0.5
        for qid, q in queries.items():
            assert q["rr"] == pytest.approx(evaluated[qid]["RR"], abs=1e-12)
            assert q["ndcg"] == pytest.approx(evaluated[qid]["nDCG@3"], abs=1e-12)
        assert result["aggregate"]["mrr"] == pytest.approx(  # type: ignore[index]
            sum(v["RR"] for v in evaluated.values()) / len(evaluated), abs=1e-12)
        assert not any("equal scores" in w for w in result["warnings"])  # type: ignore[attr-defined]
    # the run file lists the tied chunks in the same order, ranks 1 and 2
    rows = [r.split() for r in (tmp_path / "runs" / "fused.run").read_text().splitlines()
            if r.startswith("q_vac ")]
    assert [(r[2], r[3]) for r in rows[:2]] == [("vac_b", "1"), ("vac_a", "2")]


def test_a_results_file_keeps_its_order_and_the_gate_says_eval_would_not(
        kb: Path, tmp_path: Path) -> None:
    """An external system's list is what its users get: scored in its order, even among ties;
    the gate warns that a run file of it would rank the tie by id."""
    results = tmp_path / "results.jsonl"

    def write(vac_b_score: float) -> None:
        results.write_text("".join(json.dumps({"query_id": q, "results": r}) + "\n" for q, r in [
            ("q_vac", [{"id": "vac_a", "score": 0.9}, {"id": "vac_b", "score": vac_b_score},
                       {"id": "sal", "score": 0.2}]),
            ("q_jor", [{"id": "jor", "score": 0.8}, {"id": "vac_a", "score": 0.3}]),
        ]), encoding="utf-8")

    write(0.9)
    tied = _gate(str(kb / "golden.yaml"), "--results", str(results))
    vac = next(q for q in tied["queries"] if q["id"] == "q_vac")  # type: ignore[attr-defined]
    assert vac["rr"] == 1.0 and vac["expected"][0]["rank"] == 1
    # (the 2-query set is also warned about as too small for its policy: not this test's matter)
    ties = [w for w in tied["warnings"] if "equal scores" in w]  # type: ignore[attr-defined]
    assert ties == [
        "1 query (q_vac) lists results with exactly equal scores in another order than "
        "`recallwatch eval` ranks them (by id, descending, as trec_eval does): the gate scores "
        "the order your system returned, and a run file of the same results would give other "
        "RR, nDCG and AP values; give tied results distinct scores, in your order, to make both "
        "agree"]
    write(0.85)  # distinct scores in the same order: nothing to warn about
    again = _gate(str(kb / "golden.yaml"), "--results", str(results))["warnings"]
    assert not any("equal scores" in w for w in again)  # type: ignore[attr-defined]
