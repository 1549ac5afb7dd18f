"""Builders for gate tests: golden sets and ranked results written by hand, no store needed."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.results import RankedList


def golden(*queries: dict[str, Any], top_k: int = 10) -> GoldenSet:
    return GoldenSet.from_dict({"name": "t", "version": "1", "top_k": top_k,
                                "queries": list(queries)})


def ranked(placed: dict[str, int], n: int = 20, prefix: str = "other") -> RankedList:
    """A list of n results with strictly decreasing scores, ``placed`` ids at their 1-based ranks
    and filler ids elsewhere."""
    by_rank = {r: cid for cid, r in placed.items()}
    ids = [by_rank.get(r, f"{prefix}_{r:03d}") for r in range(1, n + 1)]
    scores = np.linspace(0.95, 0.95 - 0.01 * (n - 1), n)
    return RankedList(ids, scores)
