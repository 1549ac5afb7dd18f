"""The sweep's figures drawn on matplotlib's ``Figure`` directly: no pyplot (no global figure
registry, no backend switched for the whole process), and fixed margins instead of
``tight_layout``, which measured every label by drawing the figure once more (about half of a
figure's time). The margins hold the widest labels these plots have: recall, and costs on a log
scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["new_figure", "save_figure"]

SIZE = (7, 4.5)  # inches
DPI = 120
MARGINS = {"left": 0.14, "right": 0.98, "bottom": 0.13, "top": 0.92}


def new_figure() -> tuple[Any, Any]:
    """A figure of the sweep's size with one set of axes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE)
    fig.subplots_adjust(**MARGINS)
    return fig, fig.add_subplot()


def save_figure(fig: Any, path: str | Path) -> None:
    """The figure as a PNG (matplotlib's Agg renderer)."""
    fig.savefig(path, dpi=DPI, format="png")
