"""A hybrid pipeline (dense store + BM25, fused) gated end to end: the final lists are what the
gate judges, the stages are reported, the run files are the pipeline's own lists."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from recallwatch.formats.trec import read_run
from recallwatch.retrievers import open_retriever
from recallwatch.retrievers.fusion import fuse
from recallwatch.retrievers.pipeline import Pipeline, load_pipeline
from tests.clirun import cli
from tests.retrievers.conftest import QUERIES, store_uri


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def hybrid(kb: Path, tmp: Path, extra: str = "") -> Path:
    return write(tmp / "pipeline.yaml", f"""\
retrievers:
  dense: "{store_uri(kb)}"
  keyword: "bm25:{kb / 'corpus.jsonl'}"
depth: 6
fuse: {{method: rrf, k: 60}}
{extra}""")


def test_the_gate_judges_the_fused_lists_and_writes_every_run(kb: Path, tmp_path: Path) -> None:
    pipeline = hybrid(kb, tmp_path)
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(pipeline),
                         "--no-history", "--format", "json", "--runs-out", str(tmp_path / "runs"))
    assert code in (0, 1), err
    result = json.loads(out)
    # the fused lists, computed here from each retriever on its own, are what was judged
    texts = [t for _, t, _ in QUERIES]
    dense = open_retriever(store_uri(kb), name="dense")
    keyword = open_retriever(f"bm25:{kb / 'corpus.jsonl'}", name="keyword")
    try:
        lists = {"dense": dense.search(texts, 6), "keyword": keyword.search(texts, 6)}
    finally:
        dense.close()  # type: ignore[attr-defined]
    # rrf ties often (rank 1 in one list and 2 in the other, and the reverse): tied chunks come
    # ordered as the measures rank them, id descending, so fused.run evaluates as it was judged
    fused = fuse(lists, method="rrf", k=60)
    tied = [(a, b) for hits in fused for a, b in pairwise(hits) if a[1] == b[1]]
    assert tied and all(a[0] > b[0] for a, b in tied)
    by_id = {q["id"]: q for q in result["queries"]}
    for (qid, _, expected), hits in zip(QUERIES, fused):
        q = by_id[qid]
        assert [t["id"] for t in q["top"]] == [c for c, _ in hits[:3]]
        assert q["stage"]["never_retrieved"] == [c for c in expected
                                                 if c not in {h for h, _ in hits}]
    assert result["config"]["source"] == "pipeline"
    stages = result["stages"]
    assert stages["depth"] == 6 and stages["fused"] and not stages["reranked"]
    assert set(stages["retriever_recall"]) == {"dense", "keyword"}
    # every retriever's run file and the fused one: TREC six columns, tag = name, depth lines
    for name, want in [("dense", lists["dense"]), ("keyword", lists["keyword"]),
                       ("fused", fused)]:
        assert len(read_run(tmp_path / "runs" / f"{name}.run"))  # any TREC reader reads it
        text = (tmp_path / "runs" / f"{name}.run").read_text(encoding="utf-8").splitlines()
        rows = [line.split() for line in text]
        assert all(len(r) == 6 and r[1] == "Q0" and r[5] == name for r in rows)
        for (qid, _, _), hits in zip(QUERIES, want):
            mine = [r for r in rows if r[0] == qid]
            assert [r[2] for r in mine] == [c for c, _ in hits[:6]]
            assert [int(r[3]) for r in mine] == list(range(1, len(mine) + 1))
            # the embedder's float32 arithmetic varies in the last digits with the batch
            assert [float(r[4]) for r in mine] == pytest.approx([s for _, s in hits[:6]],
                                                                rel=1e-5)


def test_terminal_report_shows_the_stages(kb: Path, tmp_path: Path) -> None:
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--pipeline",
                         str(hybrid(kb, tmp_path)), "--no-history")
    assert code in (0, 1), err
    assert "candidate recall" in out and "final recall@" in out


def test_one_retriever_without_fusion_equals_the_store_gate(kb: Path, tmp_path: Path) -> None:
    pipeline = write(tmp_path / "p.yaml", f'retrievers:\n  dense: "{store_uri(kb)}"\ndepth: 20\n')
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(pipeline),
                         "--no-history", "--format", "json")
    code2, out2, err2 = cli("gate", str(kb / "golden.yaml"), "--store", store_uri(kb),
                            "--no-history", "--format", "json")
    assert code == code2, err + err2
    mine, theirs = json.loads(out), json.loads(out2)
    for a, b in zip(mine["queries"], theirs["queries"]):
        assert [t["id"] for t in a["top"]] == [t["id"] for t in b["top"]]
        assert a["recall"] == b["recall"]


def test_pipeline_search_cuts_to_top_k(kb: Path, tmp_path: Path) -> None:
    spec = load_pipeline(hybrid(kb, tmp_path, "top_k: 2\n"))
    with Pipeline.from_spec(spec, base_dir=tmp_path) as p:
        run = p.search([QUERIES[0][1]], 10)
    assert len(run.final[0]) == 2
    assert run.final[0] == run.fused[0][:2]
    assert all(len(lists[0]) <= 6 for lists in run.per_retriever.values())


def test_runs_out_without_a_pipeline_is_a_usage_error(kb: Path, tmp_path: Path) -> None:
    code, _, err = cli("gate", str(kb / "golden.yaml"), "--store", store_uri(kb),
                       "--no-history", "--runs-out", str(tmp_path / "runs"))
    assert code == 2 and "--runs-out" in err
