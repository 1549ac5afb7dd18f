"""Imports every measure family so that each registers itself in MEASURES, in this order."""

from __future__ import annotations

import recallwatch.metrics.average_precision  # noqa: F401
import recallwatch.metrics.bpref  # noqa: F401
import recallwatch.metrics.counts  # noqa: F401
import recallwatch.metrics.diversity  # noqa: F401
import recallwatch.metrics.err  # noqa: F401
import recallwatch.metrics.gmap  # noqa: F401
import recallwatch.metrics.iprec  # noqa: F401
import recallwatch.metrics.judged  # noqa: F401
import recallwatch.metrics.ndcg  # noqa: F401
import recallwatch.metrics.precision  # noqa: F401
import recallwatch.metrics.rbp  # noqa: F401
import recallwatch.metrics.recall  # noqa: F401
import recallwatch.metrics.reciprocal_rank  # noqa: F401
import recallwatch.metrics.rprec  # noqa: F401
import recallwatch.metrics.set_measures  # noqa: F401
import recallwatch.metrics.success  # noqa: F401
