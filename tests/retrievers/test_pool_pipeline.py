"""``label pool --pipeline``: each retriever of a pipeline (and its fused list) is a pooled
system, with its own top results."""

from __future__ import annotations

import json
from pathlib import Path

from recallwatch.retrievers import open_retriever
from tests.clirun import cli
from tests.retrievers.conftest import QUERIES, store_uri


def test_every_retriever_and_the_fused_list_are_pooled(kb: Path, tmp_path: Path) -> None:
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(f'retrievers:\n  dense: "{store_uri(kb)}"\n'
                        f'  keyword: "bm25:{kb / "corpus.jsonl"}"\nfuse: rrf\n',
                        encoding="utf-8")
    out = tmp_path / "queue.jsonl"
    code, stdout, err = cli("label", "pool", str(kb / "golden.yaml"), "--out", str(out),
                            "--pipeline", str(pipeline), "--depth", "3", "--format", "json")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["systems"] == ["dense", "keyword", "fused"]
    items = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    keyword = open_retriever(f"bm25:{kb / 'corpus.jsonl'}")
    tops = dict(zip((q for q, _, _ in QUERIES), keyword.search([t for _, t, _ in QUERIES], 3)))
    expected = {q: set(e) for q, _, e in QUERIES}
    for qid, hits in tops.items():
        pooled = {i["id"] for i in items if i["query_id"] == qid
                  and "keyword" in i["found_by"]}
        assert pooled == {c for c, _ in hits} - expected[qid]  # judged chunks are left out
    assert all(i["text"] for i in items)  # texts from the pipeline's store or corpus
