"""Holm–Bonferroni: adjusted p-values reproduce the step-down procedure at every alpha."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallwatch.errors import InputError
from recallwatch.stats import holm


def _holm_rejections(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm (1979) as written: walk up the sorted p-values, stop at the first non-rejection."""
    rejected = np.zeros(p.size, dtype=bool)
    for step, index in enumerate(np.argsort(p, kind="stable")):
        if p[index] > alpha / (p.size - step):
            break
        rejected[index] = True
    return rejected


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
       st.sampled_from([0.001, 0.01, 0.05, 0.1, 0.2]))
def test_adjusted_p_values_reject_exactly_what_holm_rejects(pvalues: list[float],
                                                            alpha: float) -> None:
    p = np.array(pvalues)
    adjusted = holm(p)
    assert np.all(adjusted >= p)
    assert np.all(adjusted <= 1.0)
    expected = _holm_rejections(p, alpha)
    # Tolerate float rounding exactly at the boundary (p * m vs alpha / m computed two ways).
    boundary = np.isclose(adjusted, alpha, rtol=1e-12, atol=0)
    assert np.array_equal((adjusted <= alpha)[~boundary], expected[~boundary])


def test_known_values() -> None:
    # m = 4: sorted 0.01, 0.03, 0.04, 0.5 -> 0.04, max(0.04, 0.09), max(0.09, 0.08), 0.5
    assert holm([0.01, 0.04, 0.03, 0.5]).tolist() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.3]).tolist() == [0.3]
    assert holm([]).tolist() == []


def test_out_of_range_p_value_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"record 'position 1': field 'pvalues': "
                                         r"expected a p-value in \[0, 1\], found 1.5"):
        holm([0.1, 1.5])
