"""Reranking: a python: function and a real sentence-transformers CrossEncoder (a tiny one built
and saved here, nothing downloads) re-score the first stage's candidates; the gate reports what
the reranker lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallwatch.errors import RetrieverError
from recallwatch.retrievers.pipeline import Pipeline, load_pipeline
from tests.clirun import cli
from tests.retrievers.conftest import QUERIES, TEXTS, store_uri

REVERSE = """
def rerank(query, docs):
    # the first stage's order, turned upside down: the best candidate becomes the worst
    return [float(i) for i in range(len(docs))]
"""


def pipeline(tmp: Path, kb: Path, rerank: str, retriever: str | None = None) -> Path:
    path = tmp / "pipeline.yaml"
    path.write_text(f"retrievers:\n  dense: \"{retriever or store_uri(kb)}\"\ndepth: 5\n"
                    f"rerank: {rerank}\n", encoding="utf-8")
    return path


def test_a_python_reranker_reorders_and_the_gate_names_what_it_lost(kb: Path,
                                                                    tmp_path: Path) -> None:
    (tmp_path / "rev_rerank.py").write_text(REVERSE, encoding="utf-8")
    path = pipeline(tmp_path, kb, "{python: 'rev_rerank:rerank'}")
    with Pipeline.from_spec(load_pipeline(path), base_dir=tmp_path) as p:
        run = p.search([t for _, t, _ in QUERIES], 5)
    for fused, final in zip(run.fused, run.final):
        assert [c for c, _ in final] == [c for c, _ in reversed(fused)]
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(path),
                         "--no-history", "--format", "json")
    assert code in (0, 1), err
    result = json.loads(out)
    for q, (_, _, expected), fused in zip(result["queries"], QUERIES, run.fused):
        candidates = [c for c, _ in fused]
        top = [t["id"] for t in q["top"]]
        assert q["stage"]["lost_by_reranker"] == [c for c in expected
                                                  if c in candidates and c not in top]
        assert q["stage"]["never_retrieved"] == [c for c in expected if c not in candidates]
    assert result["stages"]["reranked"]
    assert result["stages"]["lost_by_reranker"] > 0  # reversing buries the best candidates
    code, out, _ = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(path), "--no-history")
    assert "lost by the reranker:" in out


def test_texts_come_from_the_corpus_when_no_retriever_holds_them(kb: Path,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "len_rerank.py").write_text(
        "def rerank(query, docs):\n    return [float(len(text)) for _, text in docs]\n",
        encoding="utf-8")
    (tmp_path / "fixed_ret.py").write_text(
        f"def f(query, k):\n    return [(c, 1.0) for c in {list(TEXTS)!r}][:k]\n",
        encoding="utf-8")
    corpus = kb / "corpus.jsonl"
    path = pipeline(tmp_path, kb, f"{{python: 'len_rerank:rerank', corpus: '{corpus}'}}",
                    retriever="python:fixed_ret:f")
    with Pipeline.from_spec(load_pipeline(path), base_dir=tmp_path) as p:
        final = p.search(["x"], 5).final[0]
    first = list(TEXTS)[:5]
    # longest first; texts of equal length (vac and vac_gold) tie, ordered by id descending
    assert [c for c, _ in final] == sorted(sorted(first, reverse=True),
                                           key=lambda c: -len(TEXTS[c]))
    path = pipeline(tmp_path, kb, "{python: 'len_rerank:rerank'}", retriever="python:fixed_ret:f")
    with Pipeline.from_spec(load_pipeline(path), base_dir=tmp_path) as p, \
            pytest.raises(RetrieverError, match=r"needs the text of 5 chunk\(s\) no retriever "
                                                r"holds"):
        p.search(["x"], 5)


def test_a_reranker_answering_the_wrong_count_is_a_located_error(kb: Path,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "short_rerank.py").write_text("def rerank(query, docs):\n    return [1.0]\n",
                                              encoding="utf-8")
    path = pipeline(tmp_path, kb, "{python: 'short_rerank:rerank'}")
    code, _, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(path), "--no-history")
    assert code == 2 and "1 scores for 5 chunks" in err


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT cross-encoder (random weights, one layer) with a word-level vocabulary written
    here, saved where CrossEncoder loads it from."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = tmp_path_factory.mktemp("ce")
    words = sorted({w.strip("¿?.,:").lower() for t in [*TEXTS.values(), *(q for _, q, _ in QUERIES)]
                    for w in t.split()})
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n",
                     encoding="utf-8")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=5 + len(words), hidden_size=16,
                                     num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=128,
                                     num_labels=1)
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    transformers.BertTokenizer(str(vocab), do_lower_case=True).save_pretrained(path)
    return path


@pytest.mark.slow  # torch and transformers imported: over a minute on a loaded machine
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_a_cross_encoder_loaded_by_path_reranks(kb: Path, tmp_path: Path, cross_encoder: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from sentence_transformers import CrossEncoder

    path = pipeline(tmp_path, kb, f"{{cross_encoder: '{cross_encoder}'}}")
    with Pipeline.from_spec(load_pipeline(path), base_dir=tmp_path) as p:
        run = p.search([t for _, t, _ in QUERIES], 5)
    model = CrossEncoder(str(cross_encoder), device="cpu")
    for (_, text, _), fused, final in zip(QUERIES, run.fused, run.final):
        scores = model.predict([(text, TEXTS[c]) for c, _ in fused])
        # best first, exact ties by id descending (recallwatch.vectors.measured_tie_order)
        pairs = list(zip((c for c, _ in fused), (float(s) for s in scores)))
        want = sorted(sorted(pairs, key=lambda h: h[0], reverse=True), key=lambda h: -h[1])
        assert [c for c, _ in final] == [c for c, _ in want]
        assert [s for _, s in final] == pytest.approx([s for _, s in want], rel=1e-5)
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(path),
                         "--no-history", "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["config"]["pipeline"]["reranker"]["kind"] == "cross-encoder"
