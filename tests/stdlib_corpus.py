"""A small English corpus nobody here wrote: the docstrings of twenty Python standard-library
modules, read with :mod:`inspect` when a test runs (one chunk per documented function, class and
method; the module is the chunk's document and its domain). Its texts are what Python ships, so
they change a little from one Python version to the next; the ids a test expects are ones every
supported version has.

Such a corpus is what the first-hour walkthrough meets outside its own example: signatures and
doctests at the start of chunks, code in the middle of prose, and the same docstring under two
names (``datetime.date.fromtimestamp`` and ``sqlite3.Date.fromtimestamp``)."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

MODULES = ("json", "os.path", "pathlib", "datetime", "sqlite3", "statistics", "time", "random",
           "re", "collections", "shutil", "csv", "textwrap", "hashlib", "base64", "uuid",
           "heapq", "bisect", "string", "fnmatch")
# at most this many chunks per module (its members in alphabetical order), to keep it small
PER_MODULE = 60


def _members(module: Any) -> list[tuple[str, Any]]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = []
    for name in sorted(set(names)):
        obj = getattr(module, name, None)
        if not callable(obj):  # a constant's docstring is its type's
            continue
        out.append((name, obj))
        if inspect.isclass(obj):
            out += [(f"{name}.{m}", getattr(obj, m)) for m, v in sorted(vars(obj).items())
                    if not m.startswith("_") and (callable(getattr(obj, m, None))
                                                  or isinstance(v, property))]
    return out


def _text(name: str, obj: Any) -> str | None:
    doc = inspect.getdoc(obj)
    if not doc or len(doc.split()) < 4:
        return None
    try:
        head = f"{name.rsplit('.', 1)[-1]}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return doc
    return doc if doc.startswith(head.split("(")[0] + "(") else f"{head}\n\n{doc}"


def chunks() -> list[dict[str, str]]:
    """The corpus's records, in module order."""
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        kept = 0
        for name, obj in _members(module):
            cid = f"{module_name}.{name}"
            text = _text(name, obj)
            if text is None or cid in seen:
                continue
            seen.add(cid)
            out.append({"id": cid, "text": text, "doc_id": module_name,
                        "domain": module_name.split(".")[0]})
            kept += 1
            if kept == PER_MODULE:
                break
    return out


def write_corpus(path: Path) -> int:
    """Write the corpus as JSON Lines; returns how many chunks."""
    records = chunks()
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return len(records)
