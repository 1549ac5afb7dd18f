"""recallwatch: does your vector search still find what it must?

    import recallwatch as rw
    result = rw.run_gate(rw.load_golden("golden.yaml"), store=rw.open_store(uri))
    scores = rw.evaluate(rw.Qrels.from_trec("qrels"), rw.Run.from_trec("run"), ["nDCG@10"])

Names are imported on first use, so ``import recallwatch`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from recallwatch._version import __version__
from recallwatch.errors import RecallwatchError

if TYPE_CHECKING:
    from recallwatch.acceptance.gate import Gate, run_gate
    from recallwatch.acceptance.model import GateResult
    from recallwatch.embedders import get_embedder
    from recallwatch.formats.golden import GoldenSet, load_golden
    from recallwatch.formats.policy import Policy, load_policy
    from recallwatch.metrics import Qrels, Run, evaluate, parse_measure
    from recallwatch.stores import open_store

__all__ = [
    "Gate",
    "GateResult",
    "GoldenSet",
    "Policy",
    "Qrels",
    "RecallwatchError",
    "Run",
    "__version__",
    "evaluate",
    "get_embedder",
    "load_golden",
    "load_policy",
    "open_store",
    "parse_measure",
    "run_gate",
]

_LAZY = {
    "Gate": "recallwatch.acceptance.gate",
    "run_gate": "recallwatch.acceptance.gate",
    "GateResult": "recallwatch.acceptance.model",
    "GoldenSet": "recallwatch.formats.golden",
    "load_golden": "recallwatch.formats.golden",
    "Policy": "recallwatch.formats.policy",
    "load_policy": "recallwatch.formats.policy",
    "Qrels": "recallwatch.metrics",
    "Run": "recallwatch.metrics",
    "evaluate": "recallwatch.metrics",
    "parse_measure": "recallwatch.metrics",
    "open_store": "recallwatch.stores",
    "get_embedder": "recallwatch.embedders",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'recallwatch' has no attribute {name!r}")
