"""recallwatch: does your vector search still find what it must?

    import recallwatch as rw
    res = rw.evaluate("qrels.txt", "run.txt", ["nDCG@10", "R@100"])   # or dicts, frames, Run
    res.aggregate["nDCG@10"], res.to_frame()
    fused = rw.fuse([run_a, run_b], method="rrf")                     # runs in, a run out
    table = rw.compare("qrels.txt", {"bm25": run_a, "dense": run_b}, ["nDCG@10"])
    result = rw.gate("golden.yaml", "lancedb://index?table=chunks", history="runs.db")

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
    from recallwatch.acceptance.run import gate
    from recallwatch.embedders import get_embedder
    from recallwatch.formats.golden import GoldenSet, load_golden
    from recallwatch.formats.policy import Policy, load_policy
    from recallwatch.metrics import Qrels, Run, evaluate, parse_measure
    from recallwatch.retrievers.fusion import fuse_runs as fuse
    from recallwatch.stats import compare_runs as compare
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
    "compare",
    "evaluate",
    "fuse",
    "gate",
    "get_embedder",
    "load_golden",
    "load_policy",
    "open_store",
    "parse_measure",
    "run_gate",
]

# name -> (module, attribute there)
_LAZY = {
    "Gate": ("recallwatch.acceptance.gate", "Gate"),
    "run_gate": ("recallwatch.acceptance.gate", "run_gate"),
    "gate": ("recallwatch.acceptance.run", "gate"),
    "GateResult": ("recallwatch.acceptance.model", "GateResult"),
    "GoldenSet": ("recallwatch.formats.golden", "GoldenSet"),
    "load_golden": ("recallwatch.formats.golden", "load_golden"),
    "Policy": ("recallwatch.formats.policy", "Policy"),
    "load_policy": ("recallwatch.formats.policy", "load_policy"),
    "Qrels": ("recallwatch.metrics", "Qrels"),
    "Run": ("recallwatch.metrics", "Run"),
    "evaluate": ("recallwatch.metrics", "evaluate"),
    "parse_measure": ("recallwatch.metrics", "parse_measure"),
    "compare": ("recallwatch.stats", "compare_runs"),
    "fuse": ("recallwatch.retrievers.fusion", "fuse_runs"),
    "open_store": ("recallwatch.stores", "open_store"),
    "get_embedder": ("recallwatch.embedders", "get_embedder"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'recallwatch' has no attribute {name!r}")
