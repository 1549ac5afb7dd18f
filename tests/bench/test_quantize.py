from __future__ import annotations

import numpy as np
import pytest

from recallwatch.bench.datasets import Dataset
from recallwatch.bench.quantize import int8_per_vector, quantization_study, sign_codes


def test_quantization_table_has_the_chapters_shape(small: Dataset) -> None:
    study = quantization_study(small.base, small.queries, k=10, depths=(10, 50, 200, 1000))
    rows = {r.representation.split()[0]: r for r in study.rows}
    assert [r.representation.split()[0] for r in study.rows] == ["float32", "float16", "int8",
                                                                 "binary"]
    d = small.base.shape[1]
    assert [r.bytes_per_vector for r in study.rows] == [4 * d, 2 * d, d + 4, d / 8]
    assert rows["float32"].recall == 1.0
    assert rows["float16"].recall >= 0.97
    assert rows["float16"].recall >= rows["int8"].recall > rows["binary"].recall
    curve = [p.recall for p in study.rescoring]
    assert curve == sorted(curve) and curve[-1] > rows["binary"].recall
    assert "| binary (sign) |" in study.markdown()


def test_int8_per_vector_scale_reconstructs_closely() -> None:
    x = np.random.default_rng(0).standard_normal((20, 16)).astype(np.float32)
    q8, scale = int8_per_vector(x)
    assert q8.dtype == np.int8 and np.abs(q8).max() == 127
    assert np.abs(q8 * scale - x).max() <= scale.max() / 2 + 1e-6


def test_sign_codes_pack_one_bit_per_component() -> None:
    codes = sign_codes(np.array([[1.0, -1.0, 0.5, 0.0, -2.0, 3.0, 1.0, 1.0, 4.0]]))
    assert codes.shape == (1, 2)
    assert codes[0, 0] == 0b10100111 and codes[0, 1] == 0b10000000


def test_matryoshka_truncation_against_a_direct_computation() -> None:
    # vectors whose leading dimensions carry most of the signal, as a Matryoshka embedder's do
    rng = np.random.default_rng(3)
    weights = np.linspace(3.0, 0.2, 48).astype(np.float32)
    base = rng.normal(size=(1500, 48)).astype(np.float32) * weights
    queries = base[:40] + 0.3 * rng.normal(size=(40, 48)).astype(np.float32) * weights
    study = quantization_study(base, queries, k=10, metric="cosine", depths=(),
                               truncate=(32, 16, 8, 64))
    assert [r.representation for r in study.truncation] == ["32 of 48", "16 of 48", "8 of 48"]
    assert [r.bytes_per_vector for r in study.truncation] == [128, 64, 32]

    def unit(x: np.ndarray) -> np.ndarray:
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    full = np.argsort(-(unit(queries) @ unit(base).T), axis=1, kind="stable")[:, :10]
    for row, m in zip(study.truncation, (32, 16, 8), strict=True):
        cut = np.argsort(-(unit(queries[:, :m]) @ unit(base[:, :m]).T), axis=1,
                         kind="stable")[:, :10]
        expected = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(cut, full, strict=True)])
        assert row.recall == pytest.approx(expected, abs=1e-9)
    recalls = [r.recall for r in study.truncation]
    assert recalls == sorted(recalls, reverse=True) and recalls[-1] < 1.0
    assert "| 16 of 48 | 64 |" in study.markdown()
    assert quantization_study(base, queries, k=10, metric="l2", depths=()).truncation == []
