"""Imports every measure family so that each registers itself in MEASURES, in this order."""

from __future__ import annotations

from recallwatch.metrics import (  # noqa: F401
    average_precision,
    bpref,
    counts,
    diversity,
    err,
    gmap,
    iprec,
    judged,
    ndcg,
    precision,
    rbp,
    recall,
    reciprocal_rank,
    rprec,
    set_measures,
    success,
)
