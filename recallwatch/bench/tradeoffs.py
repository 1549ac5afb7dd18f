"""ANN-Benchmarks' other two plots: recall against build time and recall against index size.

Every configuration of a build shares its build time and its index, so each build is a row of
points at one height, one point per query setting. The frontier of each plot is the set of
configurations that no other beats on both axes: as much recall for less (or equal) cost. Index
size is what the library serialises or reports (``index_bytes``); configurations whose library
cannot say (the store engine) are left out of that plot, and the plot says how many.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from recallwatch.bench._figures import new_figure, save_figure
from recallwatch.bench.frontier import pareto_mask
from recallwatch.bench.sweep import SweepResult

__all__ = ["COSTS", "Cost", "CostCurve", "cost_curve", "plot_cost"]

Cost = Literal["build_seconds", "index_bytes"]
# what each cost is called on its plot, and the file it is written to
COSTS: dict[Cost, tuple[str, str]] = {
    "build_seconds": ("build time, seconds (log)", "build_time.png"),
    "index_bytes": ("index size, MB (log)", "index_size.png"),
}


@dataclass(frozen=True)
class CostCurve:
    """The points of one plot: indices into the sweep's results, with their recall and cost."""

    cost: Cost
    points: list[int]  # results that have this cost, in the sweep's order
    recall: list[float]
    value: list[float]
    frontier: list[int]  # of ``points``: as much recall for less cost, over all engines
    frontier_by_engine: dict[str, list[int]]
    left_out: int  # results without this cost (a store's index size)


def _mask(recall: list[float], value: list[float]) -> np.ndarray:
    # less cost is better: the frontier of recall against the negated cost
    return pareto_mask(np.asarray(recall), -np.asarray(value, dtype=np.float64))


def cost_curve(sweep: SweepResult, cost: Cost) -> CostCurve:
    k = sweep.k
    points = [i for i, r in enumerate(sweep.results) if getattr(r, cost) is not None]
    recall = [sweep.results[i].recall[k] for i in points]
    value = [float(getattr(sweep.results[i], cost)) for i in points]
    front = [points[j] for j in np.flatnonzero(_mask(recall, value))] if points else []
    by_engine: dict[str, list[int]] = {}
    for label in dict.fromkeys(sweep.results[i].label for i in points):
        mine = [j for j, i in enumerate(points) if sweep.results[i].label == label]
        mask = _mask([recall[j] for j in mine], [value[j] for j in mine])
        by_engine[label] = [points[mine[j]] for j in np.flatnonzero(mask)]
    return CostCurve(cost, points, recall, value, [int(i) for i in front], by_engine,
                     len(sweep.results) - len(points))


def plot_cost(sweep: SweepResult, cost: Cost, path: str | Path) -> CostCurve:
    """Recall@k (x) against ``cost`` (y, log scale) per engine, each engine's frontier joined,
    the overall frontier drawn over them; returns the data drawn."""
    curve = cost_curve(sweep, cost)
    k, res = sweep.k, sweep.results
    scale = 1e-6 if cost == "index_bytes" else 1.0

    def y(i: int) -> float:
        return float(getattr(res[i], cost)) * scale

    fig, ax = new_figure()
    for label, front in curve.frontier_by_engine.items():
        mine = [i for i in curve.points if res[i].label == label]
        line = sorted(front, key=lambda i: res[i].recall[k])
        (drawn,) = ax.plot([res[i].recall[k] for i in line], [y(i) for i in line], marker="o",
                           ms=3, lw=1, label=label)
        ax.scatter([res[i].recall[k] for i in mine], [y(i) for i in mine], s=14, alpha=0.5,
                   color=drawn.get_color())
    front = sorted(curve.frontier, key=lambda i: res[i].recall[k])
    if front:
        ax.plot([res[i].recall[k] for i in front], [y(i) for i in front], color="black", lw=2.5,
                alpha=0.35, label="overall frontier")
    if curve.value and min(curve.value) > 0:
        ax.set_yscale("log")
    d = sweep.dataset
    note = f"; {curve.left_out} configuration(s) without one left out" if curve.left_out else ""
    ax.set_xlabel(f"recall@{k}")
    ax.set_ylabel(COSTS[cost][0])
    ax.set_title(f"{d['name']} n={d['n']} d={d['d']} {d['metric']} k={k}{note}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if curve.points:
        ax.legend(fontsize=8)
    save_figure(fig, path)
    return curve
