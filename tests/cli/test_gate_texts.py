"""`recallwatch gate` records an excerpt of each shown chunk's text (`chunk_texts`, once per chunk):
from the store, or from the corpus given with a results file; and the history and dashboard keep
and show it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from recallwatch.acceptance.model import EXCERPT_CHARS, excerpt
from recallwatch.cli import app
from recallwatch.formats.corpus import read_corpus
from recallwatch.history import History
from recallwatch.report import visible
from recallwatch.web import create_app
from tests.clirun import wide_cli
from tests.report import helpers as H

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
runner = CliRunner(env={"COLUMNS": "200"})


def shown(q: dict[str, Any]) -> set[str]:
    return {e["id"] for e in [*q["expected"], *q["top"], *q["beyond_k"]]}


def test_results_file_texts_come_from_its_corpus(tmp_path: Path) -> None:
    texts = {"a": "Vacaciones: 30 días naturales.\n\nSe piden con un mes de antelación.",
             "b": "Nóminas " * 100, "x": "La jornada es de 40 horas."}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": c, "text": t}) + "\n" for c, t in texts.items()))
    golden = tmp_path / "g.json"
    golden.write_text(json.dumps({"name": "g", "queries": [
        {"id": "q1", "text": "¿Cuántos días de vacaciones?", "expected": ["a", "b"]}]}))
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"query_id": "q1", "results": [
        {"id": c, "score": s} for c, s in (("a", 0.9), ("x", 0.8), ("b", 0.7), ("y", 0.6))]}))

    def gate(*extra: str) -> dict[str, Any]:
        r = runner.invoke(app, ["gate", str(golden), "--results", str(results), "--no-history",
                                "--format", "json", *extra])
        assert r.exit_code in (0, 1), r.stderr
        return json.loads(r.stdout)  # type: ignore[no-any-return]

    # without the corpus, a results file carries no text: the key is there, empty
    assert gate()["chunk_texts"] == {}
    got = gate("--corpus", str(corpus))["chunk_texts"]
    # every chunk the corpus holds, on one line, cut at the bound; "y" is in no corpus
    assert got == {"a": "Vacaciones: 30 días naturales. Se piden con un mes de antelación.",
                   "x": texts["x"], "b": "Nóminas " * 37 + "Nóm…"}  # 37 × 8 + 3 = 299
    assert len(got["b"]) == EXCERPT_CHARS


@pytest.mark.slow  # ingests the example knowledge base with the embedded model
def test_a_lancedb_run_of_the_example_records_and_shows_its_texts(tmp_path: Path) -> None:
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    r = runner.invoke(app, ["ingest", str(KB / "corpus_v1.jsonl"), "--store", store,
                            "--no-progress"])
    assert r.exit_code == 0, r.output
    db = tmp_path / "history.db"
    r = runner.invoke(app, ["gate", str(KB / "golden.yaml"), "--store", store, "--policy",
                            str(KB / "policy.yaml"), "--history", str(db), "--format", "json"])
    assert r.exit_code in (0, 1), r.stderr
    out = json.loads(r.stdout)
    corpus = {c.id: c.text for c in read_corpus(KB / "corpus_v1.jsonl")}
    # every chunk the run shows, once, with its own text read back from the corpus file
    assert out["chunk_texts"] == {c: excerpt(corpus[c])
                                  for c in set().union(*map(shown, out["queries"]))}
    with History(db) as h:
        assert dict(h.load(out["run_id"]).chunk_texts) == out["chunk_texts"]

    q = next(q for q in out["queries"] if not q["passed"])
    client = TestClient(create_app(db), base_url="http://127.0.0.1")  # the Host it allows
    resp = client.get(f"/runs/{quote(out['run_id'])}/queries/{quote(q['id'], safe='')}")
    assert resp.status_code == 200
    H.assert_inert(resp.text)
    rows = H.parse(resp.text).cssselect("table.expected tbody tr")
    assert [(H.text(row.cssselect("code.chunk-id")[0]), H.text(row.cssselect(".chunk-text")[0]))
            for row in rows] == [(e["id"], " ".join(visible(out["chunk_texts"][e["id"]]).split()))
                                 for e in q["expected"]]


def test_a_query_expecting_more_chunks_than_k_is_warned(tmp_path: Path) -> None:
    """Twelve expected chunks, top 10 scored: recall at most 10/12, under the floor: the gate
    says so instead of leaving the failure to the diagnosis."""
    expected = [f"c{i:02d}" for i in range(12)]
    golden = tmp_path / "g.yaml"
    golden.write_text('name: g\nversion: "1"\nqueries:\n'
                      f"  - {{id: wide, text: t, expected: [{', '.join(expected)}]}}\n"
                      "  - {id: narrow, text: t, expected: [c00]}\n", encoding="utf-8")
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps({"query_id": q, "results": [
        {"id": c, "score": 1 - i / 100} for i, c in enumerate(expected)]}) + "\n"
        for q in ("wide", "narrow")), encoding="utf-8")
    code, out, err = wide_cli("gate", str(golden), "--results", str(results), "--no-history",
                              "--format", "json")
    assert code == 1 and "Internal error" not in err  # STOP: the wide query fails
    # (the 2-query set is also warned about as too small for its policy: not this test's matter)
    warnings = [w for w in json.loads(out)["warnings"] if "too small" not in w]
    assert warnings == [
        "query wide expects 12 chunks but only its top 10 are scored: its recall is at most "
        "10/12 = 0.833 (floor 0.9), so it can never pass: raise its top_k (or the policy's) to "
        "at least 12, or split it into queries that each expect fewer chunks"]
