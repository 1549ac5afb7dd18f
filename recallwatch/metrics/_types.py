"""Names of types that the measure declarations and the ranking code share (kept apart, so
that neither imports the other)."""

from __future__ import annotations

from typing import Literal

__all__ = ["DCG_CHOICES", "Dcg"]

Dcg = Literal["log2", "exp-log2"]
DCG_CHOICES: tuple[Dcg, ...] = ("log2", "exp-log2")
