"""Option types and helpers shared by commands (kept light: no heavy imports)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

DEFAULT_HISTORY = Path(".recallwatch/history.db")


class TableJson(str, Enum):
    table = "table"
    json = "json"


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
