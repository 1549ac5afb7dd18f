from __future__ import annotations

import numpy as np

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
