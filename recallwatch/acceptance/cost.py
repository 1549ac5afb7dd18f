"""What a gate run on a store cost, and how two runs' costs differ.

Comparing quality while ignoring cost favours the more expensive system, so every run on a store
records its cost next to its quality:

* search latency: the wall time of a golden query's own search call, one query per call, in
  milliseconds, as p50 (median) and p99 (linear interpolation between the two nearest queries);
  timed on a sample of the golden queries spread evenly over the set (the ranked lists the gate
  scores come from one batched call): by default as many as fit in 10 % of the time spent
  retrieving the whole set, at most 100, or the number the run asks for (``latency_sample``,
  recorded in the run's configuration; 0 measures no cost);
* query embedding time: the golden queries are embedded in one batch; its time divided by the
  number of queries;
* index bytes: the ANN index's size, where the store can say (``SupportsIndexSize``).

"Cost increase" is the relative change of each of search p99, embedding time per query and index
bytes against a baseline run: +0.25 means 25 % more. Timings are measured, not modelled: they
vary between runs of the same system on a busy machine, so a cap on them is a guard against large
regressions, not a significance claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the history reads the labels below without loading the retrieval code
    from recallwatch.acceptance.retrieve import Timings

__all__ = ["CAPPED", "COST_LABELS", "cost_deltas", "cost_line", "format_cost", "measure_cost"]

#: The cost figures a run records, as a reader names them.
COST_LABELS: dict[str, str] = {
    "search_p50_ms": "search latency p50 (ms)",
    "search_p99_ms": "search latency p99 (ms)",
    "embed_ms_per_query": "query embedding (ms/query)",
    "index_bytes": "index bytes",
}
#: The figures ``max_cost_increase`` caps.
CAPPED: tuple[str, ...] = ("search_p99_ms", "embed_ms_per_query", "index_bytes")


def measure_cost(timings: Timings, index_bytes: int | None) -> dict[str, Any] | None:
    """The cost of a run from its source's timings (None when nothing was searched)."""
    import numpy as np

    if not timings.search_each:
        return None
    ms = np.asarray(timings.search_each, dtype=np.float64) * 1000.0
    return {
        "queries": int(ms.size),
        "search_p50_ms": float(np.percentile(ms, 50)),
        "search_p99_ms": float(np.percentile(ms, 99)),
        "search_mean_ms": float(ms.mean()),
        "search_max_ms": float(ms.max()),
        "embed_ms_per_query": (timings.embed * 1000.0 / timings.embedded
                               if timings.embedded else None),
        "index_bytes": index_bytes,
    }


def cost_deltas(base: Mapping[str, Any] | None,
                current: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per cost figure both runs know: old, new, delta and the relative increase (None when the
    old value is 0: an increase from nothing has no ratio)."""
    if not base or not current:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for key in COST_LABELS:
        old, new = base.get(key), current.get(key)
        if old is None or new is None:
            continue
        out[key] = {"old": old, "new": new, "delta": new - old,
                    "increase": (new - old) / old if old > 0 else None}
    return out


def cost_line(cost: Mapping[str, Any]) -> str:
    """One line for a report: what the run cost."""
    parts = [f"search latency p50 {cost['search_p50_ms']:.1f} ms, p99 "
             f"{cost['search_p99_ms']:.1f} ms over {cost['queries']} queries"]
    if cost.get("embed_ms_per_query") is not None:
        parts.append(f"query embedding {cost['embed_ms_per_query']:.1f} ms/query")
    if cost.get("index_bytes") is not None:
        parts.append(f"ANN index {_bytes(cost['index_bytes'])}")
    return "cost: " + "; ".join(parts)


def format_cost(key: str, value: float) -> str:
    if key == "index_bytes":
        return _bytes(value)
    return f"{value:.2f}"


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
