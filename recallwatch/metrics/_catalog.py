"""Imports every measure family so that each registers itself in MEASURES, in this order."""

from __future__ import annotations

import recallwatch.metrics.average_precision
import recallwatch.metrics.bpref
import recallwatch.metrics.counts
import recallwatch.metrics.diversity
import recallwatch.metrics.err
import recallwatch.metrics.gmap
import recallwatch.metrics.iprec
import recallwatch.metrics.judged
import recallwatch.metrics.ndcg
import recallwatch.metrics.precision
import recallwatch.metrics.rbp
import recallwatch.metrics.recall
import recallwatch.metrics.reciprocal_rank
import recallwatch.metrics.rprec
import recallwatch.metrics.set_measures
import recallwatch.metrics.success  # noqa: F401  (the name `recallwatch` is bound once for all)
