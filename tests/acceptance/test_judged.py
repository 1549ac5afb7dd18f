"""judged@K through `recallwatch gate --judgments`: BM25's top 10 over the example knowledge base
as the results of a system, judged in part, then in full."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.judging import judgments_text
from recallwatch.judgments.pool import bm25_rankings, load_pool_queries

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
runner = CliRunner()


def test_judged_at_k_and_the_crowding_warning(tmp_path: Path) -> None:
    queries = load_pool_queries(KB / "golden.yaml")
    top = bm25_rankings(queries, list(read_corpus(KB / "corpus_v1.jsonl")), 10)
    results = tmp_path / "bm25.jsonl"
    results.write_text("".join(json.dumps({"query_id": q, "results": [
        {"id": c, "score": 10.0 - r} for r, c in enumerate(ids)]}) + "\n"
        for q, ids in top.items()), encoding="utf-8")
    expected = {q.id: set(q.expected) for q in queries}
    judgments = tmp_path / "j.jsonl"

    def gate() -> dict[str, object]:
        r = runner.invoke(app, ["gate", str(KB / "golden.yaml"), "--results", str(results),
                                "--no-history", "--format", "json", "--judgments",
                                str(judgments)])
        assert r.exit_code in (0, 1), r.stderr
        return json.loads(r.stdout)  # type: ignore[no-any-return]

    # nothing judged beyond the golden set: only its expected chunks count
    judgments.write_text("", encoding="utf-8")
    out = gate()
    share = {q: sum(c in expected[q] for c in ids) / len(ids) for q, ids in top.items() if ids}
    judged = out["judged"]
    assert judged["per_query"] == share  # type: ignore[index]
    assert abs(judged["judged_at_k"] - sum(share.values()) / len(share)) < 1e-12  # type: ignore[index]
    assert any("unjudged results crowd the top" in w for w in out["warnings"])  # type: ignore[attr-defined]
    # every pair of the top 10 judged (any grade): judged@10 is 1 and the warning is gone
    judgments.write_text(judgments_text(
        {"query_id": q, "id": c, "grade": 0, "judge": "ana"} for q, ids in top.items()
        for c in ids), encoding="utf-8")
    out = gate()
    assert out["judged"]["judged_at_k"] == 1.0  # type: ignore[index]
    assert not any("crowd" in w for w in out["warnings"])  # type: ignore[attr-defined]
    # without --judgments the key is there, empty (the gate's JSON only gains keys)
    r = runner.invoke(app, ["gate", str(KB / "golden.yaml"), "--results", str(results),
                            "--no-history", "--format", "json"])
    assert json.loads(r.stdout)["judged"] is None
