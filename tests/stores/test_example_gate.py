"""The gate runs unchanged on every adapter: the example knowledge base gives the same verdicts
and the same failing queries on each (STOP on version 1, ACCEPT after the fix) as on the embedded
default."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.embedders import get_embedder
from recallwatch.embedders.base import Embedder
from recallwatch.formats.golden import load_golden
from recallwatch.formats.policy import load_policy
from recallwatch.ops.ingest import ingest

from .conformance import Adapter
from .test_conformance import adapter  # noqa: F401 - the parametrised fixture over every adapter

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
TABLE_QUERIES = {"irpf_autonomos_2025", "cuota_autonomos_2000", "tipos_retencion",
                 "salario_grupo_2"}


class _Memo:
    """The real USE embedder, memoised by text: every adapter gets the very same vectors without
    paying for them seven times. Name, version and dimension (so the fingerprint) are USE's."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.version, self.dimension = inner.name, inner.version, inner.dimension
        self._docs: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}

    def _cached(self, cache: dict[str, np.ndarray], texts: Sequence[str],
                embed: object) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            cache.update(zip(missing, embed(missing)))  # type: ignore[operator]
        return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, self.dimension),
                                                                          np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(self._docs, texts, self.inner.embed_documents)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(self._queries, texts, self.inner.embed_queries)


@pytest.fixture(scope="module")
def embedder() -> _Memo:
    return _Memo(get_embedder())


def test_example_gate_same_verdict_on_every_adapter(adapter: Adapter, embedder: _Memo) -> None:  # noqa: F811
    golden, policy = load_golden(KB / "golden.yaml"), load_policy(KB / "policy.yaml")
    store = adapter.open("kb")
    ingest(KB / "corpus_v1.jsonl", store, embedder, embedder_spec="use-multilingual")
    v1 = run_gate(golden, store=store, embedder=embedder, policy=policy)
    assert v1.verdict == "STOP"
    assert {q.id for q in v1.failing()} == TABLE_QUERIES
    assert round(v1.aggregate.mean_quality, 2) == 94.87
    assert {d.cause for q in v1.failing() for d in q.diagnosis} == {"description"}
    ingest(KB / "fix_v2.jsonl", store, embedder, embedder_spec="use-multilingual")
    v2 = run_gate(golden, store=store, embedder=embedder, policy=policy)
    assert v2.verdict == "ACCEPT" and v2.aggregate.mean_quality == 100.0
    assert v2.store["version"] != v1.store["version"]
