"""What the experiment tests share: the example knowledge base cut down to one domain
(:func:`small_kb`) and a plan over it (:func:`write_plan`); the answer tests' local
OpenAI-compatible chat endpoint (``chat``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from recallwatch.formats.corpus import read_corpus, write_corpus
from recallwatch.formats.golden import load_golden
from tests.answers.conftest import chat  # noqa: F401  (the fixture: a local chat endpoint)

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


def small_kb(folder: Path, *, split: bool = True) -> None:
    """The example's labour-law (rrhh) questions and the documents they quote, with the example's
    policy and reranker, in ``folder`` (without ``split``, the questions lose their tune/test
    split)."""
    golden = load_golden(KB / "golden_split.yaml")
    queries = [q for q in golden.queries if q.domain == "rrhh"]
    docs = {a.doc_id for q in queries for a in q.anchors}
    chunks = [c for c in read_corpus(KB / "corpus_v1.jsonl").chunks if c.doc_id in docs]
    write_corpus(chunks, folder / "corpus.jsonl")
    rows = [q.to_dict() for q in queries]
    if not split:
        for r in rows:
            r.pop("split", None)
    (folder / "golden.yaml").write_text(json.dumps(
        {"name": "rrhh", "version": "1", "top_k": 10, "queries": rows}, ensure_ascii=False),
        encoding="utf-8")
    for name in ("policy.yaml", "rerank.py"):
        (folder / name).write_text((KB / name).read_text(encoding="utf-8"), encoding="utf-8")


def write_plan(folder: Path, base: str, variants: Sequence[str]) -> Path:
    """``folder/plan.yaml`` over the files of :func:`small_kb`: the base and each variant given
    as a YAML mapping on one line."""
    path = folder / "plan.yaml"
    path.write_text("golden: golden.yaml\ncorpus: corpus.jsonl\npolicy: policy.yaml\n"
                    f"base: {base}\nvariants:\n" + "".join(f"  - {v}\n" for v in variants),
                    encoding="utf-8")
    return path
