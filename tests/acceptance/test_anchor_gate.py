"""The gate with content anchors, fact recall@K, history comparison across the change, and the
`golden check` / `golden migrate` commands, on the example knowledge base re-chunked into
sentences (examples/kb/rechunk.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.golden_labels import migrate_labels
from recallwatch.cli import app
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.results import load_results
from recallwatch.history.compare import compare_runs
from recallwatch.records import Chunk, chunk_to_record
from tests.acceptance.test_anchors import KB, kb_v2, rechunked

runner = CliRunner(env={"COLUMNS": "200"})
QUERY = "¿Cuántos días de asuntos propios corresponden?"


def _golden(expected: list[str]) -> GoldenSet:
    return GoldenSet.from_dict({"name": "kb-one", "version": "1", "top_k": 20, "queries": [
        {"id": "asuntos_propios", "text": QUERY, "expected": expected}]})


def _results(path: Path, ids: list[str]) -> Path:
    path.write_text(json.dumps({"query_id": "asuntos_propios", "results": [
        {"id": c, "score": round(0.9 - 0.01 * i, 4)} for i, c in enumerate(ids)]}) + "\n",
        encoding="utf-8")
    return path


def _corpus(path: Path, chunks: list[Chunk]) -> dict[str, Chunk]:
    path.write_text("".join(json.dumps(chunk_to_record(c), ensure_ascii=False) + "\n"
                            for c in chunks), encoding="utf-8")
    return {c.id: c for c in chunks}


def test_split_anchor_all_pieces_needed_and_fact_recall(tmp_path: Path) -> None:
    ids_golden = _golden(["silver_art_012", "gold_003"])
    anchored = migrate_labels(ids_golden, kb_v2(), None).golden
    sentences = rechunked("sentences", tmp_path)
    corpus = _corpus(tmp_path / "s.jsonl", sentences)
    art = [c.id for c in sentences if c.id.startswith("CONVENIO-OFICINAS-DESPACHOS-2024-2026/")
           and any(w in c.text for w in ("asuntos propios",))]
    resolution = {a.doc_id: a for a in anchored.queries[0].anchors}
    assert resolution  # two anchors, one per source document
    from recallwatch.acceptance.anchors import locate

    pieces = {d: locate(a, [c for c in sentences if c.doc_id == d]).chunk_ids
              for d, a in resolution.items()}
    assert all(len(p) > 1 for p in pieces.values()) and art
    art_doc = next(d for d in pieces if d.startswith("CONVENIO"))
    gold_doc = next(d for d in pieces if d != art_doc)
    # every piece of the article in the top 20, of the synthesis only its first piece
    top = [*pieces[art_doc], pieces[gold_doc][0]]
    filler = [c.id for c in sentences if c.id not in set(top) and c.id not in pieces[gold_doc]]
    ranked = [*top, *filler[: 20 - len(top)], *pieces[gold_doc][1:], *filler[20:40]]
    assert len(top) < 20
    result = run_gate(anchored, results=load_results(_results(tmp_path / "r.jsonl", ranked)),
                      corpus=corpus)
    q = result.queries[0]
    n_expected = len(pieces[art_doc]) + len(pieces[gold_doc])
    assert len(q.expected) == n_expected
    assert q.recall == pytest.approx(len(top) / n_expected) and not q.passed
    assert q.fact_recall == pytest.approx(0.5)  # the article's quote is in, the synthesis's not
    assert result.aggregate.mean_fact_recall == pytest.approx(0.5)
    rows = {a["doc_id"]: a for a in q.anchors}
    assert rows[art_doc]["kind"] == "split" and rows[art_doc]["in_context"] is True
    assert rows[gold_doc]["in_context"] is False
    chunking = [d for d in q.diagnosis if d.chunk_id == pieces[gold_doc][-1]]
    assert chunking and chunking[0].cause == "chunking" and "is split across" in chunking[0].summary
    # the JSON only gains keys, and reads back
    data = result.to_dict()
    assert data["queries"][0]["fact_recall"] == pytest.approx(0.5)
    from recallwatch.acceptance.model import GateResult

    again = GateResult.from_dict(json.loads(json.dumps(data)))
    assert again.queries[0].anchors == q.anchors
    # reports show the resolution and the fact recall
    from recallwatch.report.markdown import to_markdown

    md = to_markdown(result)
    assert "Fact recall@K" in md and "split across" in md


def test_history_compares_ids_with_anchors_and_across_a_rechunking(tmp_path: Path) -> None:
    ids_golden = _golden(["silver_art_012", "gold_003"])
    anchored = migrate_labels(ids_golden, kb_v2(), None).golden
    chunks = kb_v2()
    corpus = _corpus(tmp_path / "v2.jsonl", chunks)
    ranked = ["gold_003", "silver_art_012",
              *[c.id for c in chunks if c.id not in ("gold_003", "silver_art_012")][:20]]
    res = load_results(_results(tmp_path / "r.jsonl", ranked))
    before = run_gate(ids_golden, results=res, corpus=corpus)
    after = run_gate(anchored, results=res, corpus=corpus)
    c = compare_runs(before, after, n_resamples=200)
    assert not c["comparable"] and "dataset hash differs" in c["why"]
    assert c["n_shared"] == 1 and not c["newly_failing"]  # the same chunks: compared, no regression
    # the same anchors over a re-chunked corpus: the same labels, compared across new ids
    merged = rechunked("merge", tmp_path)
    merged_corpus = _corpus(tmp_path / "m.jsonl", merged)
    merged_ranked = [c.id for c in merged]
    later = run_gate(anchored, results=load_results(_results(tmp_path / "m.jsonl.r",
                                                             merged_ranked)),
                     corpus=merged_corpus)
    c2 = compare_runs(after, later, n_resamples=200)
    assert c2["n_shared"] == 1 and c2["queries_changed"] == []
    assert c2["rank_changes"] == {}  # different chunk ids: no fake rank change


def test_golden_check_and_migrate_cli(tmp_path: Path) -> None:
    golden = KB / "golden.yaml"
    v2 = tmp_path / "v2.jsonl"
    _corpus(v2, kb_v2())
    merged = tmp_path / "merged.jsonl"
    _corpus(merged, rechunked("merge", tmp_path))
    ok = runner.invoke(app, ["golden", "check", str(golden), "--corpus", str(v2)])
    assert ok.exit_code == 0, ok.output
    assert "121 label(s)" in ok.output and "121 ok" in ok.output
    bad = runner.invoke(app, ["golden", "check", str(golden), "--corpus", str(merged)])
    assert bad.exit_code == 2
    line = next(n for n, text in enumerate(golden.read_text(encoding="utf-8").splitlines(), 1)
                if text.strip() == "- id: irpf_autonomos_2025")
    assert f"Error: {golden}:{line}: record 'irpf_autonomos_2025': field 'expected'" in bad.output
    out = tmp_path / "anchored.yaml"
    mig = runner.invoke(app, ["golden", "migrate", str(golden), "--from", str(v2), "--to",
                              str(merged), "--out", str(out)])
    assert mig.exit_code == 0, mig.output
    assert "v1 #" in mig.output and "→ v2 #" in mig.output
    again = runner.invoke(app, ["golden", "check", str(out), "--corpus", str(merged),
                                "--format", "json"])
    assert again.exit_code == 0
    assert {x["status"] for x in json.loads(again.output)["labels"]} == {"ok"}
    # lost labels: a new corpus without one document → the file is written, exit 1
    partial = tmp_path / "partial.jsonl"
    _corpus(partial, [c for c in rechunked("merge", tmp_path)
                      if c.doc_id != "ESTATUTO-TRABAJADORES"])
    lost = runner.invoke(app, ["golden", "migrate", str(golden), "--from", str(v2), "--to",
                               str(partial), "--into", "ids", "--out", str(tmp_path / "i.yaml")])
    assert lost.exit_code == 1 and "lost " in lost.output
    assert (tmp_path / "i.yaml").exists()
    # bad input: nothing written, exit 2
    missing = runner.invoke(app, ["golden", "migrate", str(golden), "--from", str(partial),
                                  "--out", str(tmp_path / "never.yaml")])
    assert missing.exit_code == 2 and not (tmp_path / "never.yaml").exists()
