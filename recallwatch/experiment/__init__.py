"""Experiments across variants: which change to a retrieval pipeline wins, with evidence.

A plan (:func:`load_plan`) names a golden set, a corpus, a base pipeline and its variants
(chunking, embedder, dense / BM25 / hybrid retrieval, reranker, index settings, a corpus variant
file). :func:`run_experiment` builds each variant once (cached by content hash), judges it with the
gate, times the variants side by side, tests each against the base and chooses the winner with
evidence, or keeps the base (:mod:`recallwatch.experiment.choice`); :func:`write_outputs` writes
``results.json``, ``results.md`` and ``report.html``.
"""

from recallwatch.experiment.output import write_outputs
from recallwatch.experiment.plan import Plan, VariantSpec, load_plan
from recallwatch.experiment.runner import ExperimentResult, run_experiment

__all__ = ["ExperimentResult", "Plan", "VariantSpec", "load_plan", "run_experiment",
           "write_outputs"]
