"""``ingest --precomputed``: precomputed vectors (a `vector` field, or an .npy beside the
corpus) are written as they are, with the embedder named for the queries; a wrong dimension is
located."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recallwatch.stores import open_store
from tests.clirun import cli

TEXTS = {"a": "uno", "b": "dos", "c": "tres"}
DIM = 512  # use-multilingual's dimension


def vectors(n: int, dim: int = DIM) -> np.ndarray:
    rng = np.random.default_rng(3)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def stored(uri: str, ids: list[str]) -> np.ndarray:
    store = open_store(uri)
    try:
        return store.vectors(ids)  # type: ignore[attr-defined,no-any-return]
    finally:
        store.close()


@pytest.mark.parametrize("where", ["field", "npy"])
def test_the_given_vectors_are_what_the_store_holds(tmp_path: Path, where: str) -> None:
    v = vectors(len(TEXTS))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(
        json.dumps({"id": i, "text": t, **({"vector": v[n].tolist()} if where == "field"
                                           else {})}) + "\n"
        for n, (i, t) in enumerate(TEXTS.items())), encoding="utf-8")
    if where == "npy":
        np.save(tmp_path / "corpus.npy", v)
    uri = f"lancedb://{tmp_path / 'db'}?table=chunks"
    code, out, err = cli("ingest", str(corpus), "--store", uri, "--precomputed",
                         "--embedder", "use-multilingual", "--no-history")
    assert code == 0, err
    np.testing.assert_array_equal(stored(uri, list(TEXTS)), v)
    # the store names the embedder the queries are embedded with: a gate searches with it
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"name": "g", "top_k": 3, "queries": [
        {"id": "q", "text": "uno", "expected": ["a"]}]}), encoding="utf-8")
    code, out, err = cli("gate", str(golden), "--store", uri, "--no-history", "--format",
                         "json")
    assert code in (0, 1), err
    assert json.loads(out)["config"]["embedder"]["dimension"] == DIM


def test_a_vector_of_the_wrong_dimension_is_located(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "uno", "vector": [0.1] * DIM}) + "\n"
                      + json.dumps({"id": "b", "text": "dos", "vector": [0.1, 0.2]}) + "\n",
                      encoding="utf-8")
    code, _, err = cli("ingest", str(corpus), "--store", f"lancedb://{tmp_path / 'db'}",
                       "--precomputed", "--embedder", "use-multilingual", "--no-history")
    assert code == 2
    assert "corpus.jsonl:2: record 'b': field 'vector': expected 512 finite numbers (the " \
           "dimension of the embedder use-multilingual), found '2 numbers'" in err


def test_an_npy_of_the_wrong_shape_is_located(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in TEXTS.items()),
                      encoding="utf-8")
    np.save(tmp_path / "corpus.npy", vectors(3, 8))
    code, _, err = cli("ingest", str(corpus), "--store", f"lancedb://{tmp_path / 'db'}",
                       "--precomputed", "--embedder", "use-multilingual", "--no-history")
    assert code == 2 and "corpus.npy" in err and "found 'shape (3, 8)'" in err
    (tmp_path / "corpus.npy").unlink()
    code, _, err = cli("ingest", str(corpus), "--store", f"lancedb://{tmp_path / 'db'}",
                       "--precomputed", "--embedder", "use-multilingual", "--no-history")
    assert code == 2 and "corpus.npy beside it" in err
