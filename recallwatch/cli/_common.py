"""Helpers shared by commands (kept light: heavy modules are imported inside the functions)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:

    import typer

    from recallwatch.history import History
    from recallwatch.stores.base import VectorStore


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def emit_json(obj: Any) -> None:
    emit(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


@contextmanager
def flags_named(flags: Mapping[str, str]) -> Iterator[None]:
    """Library errors name the parameters a Python caller passes (``latency_sample=0``,
    ``tune_weights=True``, field ``'corpus='``); a command's user passes flags: inside this
    block such a name becomes the command's flag (``--latency-sample 0``, ``--tune-weights``),
    per ``flags`` (parameter -> flag)."""
    from recallwatch.errors import InputError, RecallwatchError

    try:
        yield
    except RecallwatchError as exc:
        if exc.args and isinstance(exc.args[0], str):
            exc.args = (as_flags(exc.args[0], flags), *exc.args[1:])
        if isinstance(exc, InputError) and exc.field is not None:
            exc.field = as_flags(exc.field, flags)
        raise


def as_flags(text: str, flags: Mapping[str, str]) -> str:
    """``text`` with each ``parameter=`` of ``flags`` written as its flag: ``name=True``
    becomes the bare flag, ``name=VALUE`` the flag and the value, ``name=`` alone the flag."""
    for name, flag in flags.items():
        text = re.sub(rf"(?<![\w.-]){re.escape(name)}=True\b", flag, text)
        text = re.sub(rf"(?<![\w.-]){re.escape(name)}=(?=[\w<])", flag + " ", text)
        text = re.sub(rf"(?<![\w.-]){re.escape(name)}=", flag, text)
    return text


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


def register_modules(group: typer.Typer, package: str, modules: tuple[str, ...]) -> None:
    """Register the commands of each module of ``package`` (``recallwatch.cli.GROUP``) into
    ``group``: each module defines ``register(group)`` and imports nothing heavy at import."""
    import importlib

    for name in modules:
        importlib.import_module(f"{package}.{name}").register(group)
