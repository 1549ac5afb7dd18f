"""Helpers shared by commands (kept light: heavy modules are imported inside the functions)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import typer

    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def emit_json(obj: Any) -> None:
    emit(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


def open_store(uri: str) -> VectorStore:
    """An existing store, for reading or operating on it (never created here)."""
    from recallwatch.stores import open_store as _open

    return _open(uri)


def recording_history(path: str | Path, off: bool) -> History | None:
    """The history an operation records into, or None with ``--no-history``."""
    if off:
        return None
    from recallwatch.history import History

    return History(path)


def existing_history(path: str | Path) -> History:
    """The history to read: a missing file is an error, never a new empty history."""
    from recallwatch.history import History

    return History(path, create=False)


def add_to_group(app: typer.Typer, group: str, name: str, command: Callable[..., Any]) -> None:
    """Register ``command`` as ``recallwatch GROUP NAME`` into a group another module declared.

    Lets several modules add commands to one group (``history``, ``golden``…) without importing
    each other; a missing group is a programming error, loud at import.
    """
    for registered in app.registered_groups:
        if registered.name == group and registered.typer_instance is not None:
            registered.typer_instance.command(name)(command)
            return
    raise RuntimeError(f"{group} {name}: the `{group}` command group is not registered")
