"""Reading YAML / JSON / JSONL files into plain data, remembering where each mapping started.

Every reader of a user file goes through here, so errors name the file and line the same way
everywhere: bad encoding, bad syntax, a missing file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from recallwatch.errors import InputError

__all__ = ["LINE_KEY", "check_keys", "iter_jsonl", "line_of", "load_structured", "read_text"]

# Mappings read from YAML carry their 1-based start line under this key (never a valid field name).
LINE_KEY = "__line__"


def read_text(path: str | Path) -> str:
    p = Path(path)
    if not p.exists():
        raise InputError(source=p, expected="an existing file", found="<nothing at that path>")
    if p.is_dir():
        raise InputError(source=p, expected="a file", found="<a directory>")
    data = p.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            source=p, line=line, expected="UTF-8 text",
            found=f"<byte 0x{data[exc.start]:02x} at offset {exc.start}>",
        ) from None


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping[LINE_KEY] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_structured(path: str | Path) -> Any:
    """YAML (.yaml/.yml), JSON (.json) or JSONL (.jsonl: a list of records) as plain data.

    YAML mappings carry their line under LINE_KEY; JSONL records carry their line too.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        return list(iter_jsonl(p))
    text = read_text(p)
    if not text.strip():
        raise InputError(source=p, expected="a non-empty file", found="<empty file>")
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc.msg})", source=p, line=exc.lineno) from None
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"invalid YAML ({problem})", source=p, line=line) from None


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Objects of a JSON Lines file, each with LINE_KEY set; blank lines are skipped."""
    p = Path(path)
    text = read_text(p)
    if not text.strip():
        raise InputError(source=p, expected="at least one JSON object line", found="<empty file>")
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc.msg})", source=p, line=number) from None
        if not isinstance(obj, dict):
            raise InputError(source=p, line=number, expected="a JSON object",
                             found=type(obj).__name__)
        obj[LINE_KEY] = number
        yield obj


def line_of(obj: object) -> int | None:
    return obj.get(LINE_KEY) if isinstance(obj, dict) else None


def check_keys(
    obj: dict[str, Any], valid: set[str], *, source: Path | str, record: str | None = None,
    error: Callable[..., InputError] = InputError,
) -> None:
    """Reject unknown keys, suggesting the nearest valid one."""
    from recallwatch._registry import suggest

    for key in obj:
        if key == LINE_KEY or key in valid:
            continue
        raise error(
            f"unknown key{suggest(str(key), sorted(valid))}",
            source=source, line=line_of(obj), record=record, field=str(key),
            hint=f"valid keys: {', '.join(sorted(valid))}",
        )
