"""Option types and helpers shared by commands (kept light: no heavy imports)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

DEFAULT_HISTORY = Path(".recallwatch/history.db")
# --history is a str, not a Path: a Path would turn postgresql://h/db into postgresql:/h/db.
HISTORY_HELP = ("Run history: a SQLite file, or postgresql://USER@HOST:PORT/DB (password from "
                "the environment).")


class TableJson(str, Enum):
    table = "table"
    json = "json"


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
