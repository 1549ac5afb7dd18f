"""`recallwatch label pool | agree | export | merge` end to end on the example knowledge base."""

from __future__ import annotations

import json
from pathlib import Path

from recallwatch.formats.golden import load_golden
from recallwatch.formats.judging import read_queue
from recallwatch.formats.trec import read_qrels
from recallwatch.judgments.judging import JudgmentLog
from tests.clirun import cli

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


def test_pool_agree_export_merge(tmp_path: Path) -> None:
    queue = tmp_path / "queue.jsonl"
    code, out, err = cli("label", "pool", str(KB / "golden.yaml"), "--bm25",
                         str(KB / "corpus_v1.jsonl"), "--depth", "3", "--out", str(queue),
                         "--format", "json")
    assert code == 0, err
    summary = json.loads(out)
    items = read_queue(queue)
    assert summary["queue"] == len(items) > 30
    assert (tmp_path / "queue.jsonl.provenance.json").exists()
    # two judges grade the first 30 pairs; ben is stricter on every fifth
    ana, ben = JudgmentLog(tmp_path / "ana.jsonl", "ana"), JudgmentLog(tmp_path / "ben.jsonl",
                                                                        "ben")
    for i, item in enumerate(items[:30]):
        g = i % 4
        ana.grade(item.query_id, item.id, g)
        ben.grade(item.query_id, item.id, max(g - 1, 0) if i % 5 == 0 else g)
    code, out, err = cli("label", "agree", str(tmp_path / "ana.jsonl"),
                         str(tmp_path / "ben.jsonl"), "--queue", str(queue), "--out",
                         str(tmp_path / "adjudicate.jsonl"), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    differ = [i for i in range(30) if i % 5 == 0 and i % 4 > 0]
    assert len(report["disagreements"]) == len(differ)
    assert report["agreement"]["pairs"] == 30 and 0 < report["agreement"]["kappa"] < 1
    adjudicate = read_queue(tmp_path / "adjudicate.jsonl")
    assert [a.grades for a in adjudicate] == [
        {"ana": i % 4, "ben": i % 4 - 1} for i in sorted(
            differ, key=lambda i: (items[i].query_id, items[i].id))]
    assert adjudicate[0].text  # text carried over from the queue for the adjudicator
    code, out, err = cli("label", "agree", str(tmp_path / "ana.jsonl"),
                         str(tmp_path / "ben.jsonl"))
    assert code == 0 and "weighted kappa" in out and "disagreement(s) to adjudicate" in out
    qrels = tmp_path / "human.qrels"
    code, out, err = cli("label", "export", str(tmp_path / "ana.jsonl"),
                         str(tmp_path / "ben.jsonl"), "--out", str(qrels))
    assert code == 0, err
    table = read_qrels(qrels)
    assert len(table.query_ids) == 30
    golden = tmp_path / "golden.yaml"
    code, out, err = cli("label", "merge", str(KB / "golden.yaml"), str(qrels), "--out",
                         str(golden), "--format", "json")
    assert code == 0, err
    merged = json.loads(out)
    comments = [n for n, line in enumerate(
        (KB / "golden.yaml").read_text(encoding="utf-8").splitlines())
        if line.lstrip().startswith("#")]  # the example's comments are whole lines
    assert merged["comment_lines_dropped"] == len(comments) > 0
    assert err == (f"note: the {len(comments)} comment line(s) of {KB / 'golden.yaml'} are not "
                   f"in {golden}: the merged set is written anew from its data (copy back the "
                   "comments you need)\n")
    relevant = {(q, d) for q, d, g in zip(table.query_ids.to_pylist(),
                                          table.doc_ids.to_pylist(), table.values.tolist())
                if g >= 2}
    assert merged["chunks_added"] == len(relevant)
    new = {q.id: set(q.expected) for q in load_golden(golden).queries}
    assert all(d in new[q] for q, d in relevant)


def test_bad_inputs_are_one_error_line(tmp_path: Path) -> None:
    queue = tmp_path / "q.jsonl"
    queue.write_text('{"query_id": "q", "query": "x", "id": "c", "text": "t", "found_by": '
                     '{"bm25": 0}}\n', encoding="utf-8")
    code, _, err = cli("label", "agree", str(tmp_path / "missing.jsonl"))
    assert code == 2 and err.startswith("Error: ") and err.count("\n") == 1
    code, _, err = cli("label", "serve", str(queue), "--port", "0")
    assert code == 2 and "field 'found_by.bm25'" in err and err.count("\n") == 1
    code, _, err = cli("label", "pool", str(KB / "golden.yaml"), "--out", str(queue))
    assert code == 2 and "at least one system" in err
