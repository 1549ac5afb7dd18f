"""Reading YAML / JSON / JSONL files into plain data, remembering where each mapping started.

Every reader of a user file goes through here, so errors name the file and line the same way
everywhere: bad encoding, bad syntax, a missing file. Hostile input is refused here once for all
formats: YAML aliases (a "billion laughs" expands exponentially), duplicate keys (the last would
silently win), nesting deeper than MAX_NESTING, numbers too long to read and unpaired UTF-16
surrogates (text that cannot be written back as UTF-8). What the readers then check in the data
(unknown keys, ids, numeric ranges) is :mod:`recallwatch.formats.fields`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from recallwatch._files import bytes_read, capped_lines, open_input, read_capped
from recallwatch._progress import LARGE_FILE, progress, wanted
from recallwatch.errors import InputError

__all__ = ["LINE_KEY", "MAX_NESTING", "iter_jsonl", "load_structured", "parse_json_line",
           "parse_json_value", "read_text", "text_lines", "without_lines"]

# Mappings read from YAML carry their 1-based start line under this key (never a valid field name).
LINE_KEY = "__line__"
# No recallwatch file needs more than about 6 levels; the bound keeps every reader (and every
# error message showing a value) far from Python's recursion limit.
MAX_NESTING = 20

_MERGE_TAG = "tag:yaml.org,2002:merge"
# A \uD800-\uDFFF escape in JSON text: the only way an unpaired surrogate gets into a string.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def read_text(path: str | Path) -> str:
    p = Path(path)
    if not p.exists():
        raise InputError(source=p, expected="an existing file", found="<nothing at that path>")
    if p.is_dir():
        raise InputError(source=p, expected="a file", found="<a directory>")
    data = read_capped(p, "a readable file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            source=p, line=line, expected="UTF-8 text",
            found=f"<byte 0x{data[exc.start]:02x} at offset {exc.start}>",
        ) from None


def _unreadable(text: str, exc: Exception) -> str:
    """Why a scalar cannot be read, in words (Python's message for long numbers names a
    setting a user cannot change)."""
    if "integer string conversion" in str(exc):
        return "a number longer than 4300 digits"
    value = text if len(text) <= 40 else f"{text[:40]}…"
    return f"cannot read the value {value!r}: {exc}"


class _Located:
    """Construction shared by both loaders: a value that cannot be read is refused at its line."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)  # type: ignore[misc]
        except (ValueError, OverflowError) as exc:  # a bad date, a number too long
            raise yaml.constructor.ConstructorError(
                None, None, _unreadable(str(node.value), exc), node.start_mark) from None


class _LineLoader(_Located, yaml.SafeLoader):
    """SafeLoader that records lines and refuses aliases, duplicate keys, deep nesting and
    unpaired surrogates, each with the line where it occurs."""

    _nesting = 0

    def _refuse(self, problem: str) -> yaml.composer.ComposerError:
        mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
        return yaml.composer.ComposerError(None, None, problem, mark)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise self._refuse("aliases (*name) are not accepted: write the value out in full")
        container = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        if container:
            self._nesting += 1
            if self._nesting > MAX_NESTING:
                raise self._refuse(f"nested deeper than {MAX_NESTING} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            if container:
                self._nesting -= 1


# libyaml, when PyYAML was built with it: its parser and composer are C, about ten times faster
# than PyYAML's own (0.04 s of a gate's start, seconds for a golden set of thousands of queries).
_C_LOADER: Any = getattr(yaml, "CSafeLoader", None)
_FastLineLoader: Any = None if _C_LOADER is None else type(
    "_FastLineLoader", (_Located, _C_LOADER), {"__doc__": "The same loader on libyaml."})


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    first: dict[Any, Any] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            seen = first.get(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a key must be a single value, not a list or mapping",
                key_node.start_mark) from None
        if seen is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}, first at line {seen.line + 1}",
                key_node.start_mark)
        if key == LINE_KEY:
            raise yaml.constructor.ConstructorError(
                None, None, f"{LINE_KEY!r} is a reserved key", key_node.start_mark)
        first[key] = key_node.start_mark
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    mapping[LINE_KEY] = node.start_mark.line + 1
    return mapping


def _construct_str(loader: Any, node: yaml.ScalarNode) -> str:
    value = loader.construct_scalar(node)
    if not _is_utf8(value):
        raise yaml.constructor.ConstructorError(
            None, None, "an unpaired UTF-16 surrogate escape: \\ud800-\\udfff must come in pairs",
            node.start_mark)
    return str(value)


for _loader in (_LineLoader, _FastLineLoader):
    if _loader is not None:
        _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
        _loader.add_constructor("tag:yaml.org,2002:str", _construct_str)


def _load_yaml(text: str) -> Any:
    """The document as plain data. libyaml reads it when it holds nothing to refuse; anything
    else (an alias, deep nesting, a syntax error, a duplicate key, a bad value) is read again by
    the Python loader, which refuses it at its line in the words every reader uses."""
    if _FastLineLoader is not None:
        try:
            if _nothing_to_refuse(text):
                return yaml.load(text, Loader=_FastLineLoader)
        except (yaml.YAMLError, ValueError, UnicodeError, RecursionError):
            pass
    return yaml.load(text, Loader=_LineLoader)


def _nothing_to_refuse(text: str) -> bool:
    """No alias and no nesting deeper than MAX_NESTING, from libyaml's events (a flat stream:
    no recursion, however deep the text nests)."""
    depth = 0
    for event in yaml.parse(text, Loader=_C_LOADER):
        if isinstance(event, yaml.AliasEvent):
            return False
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                return False
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return True


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
        return _parse_json(text, p, None)
    try:
        return _load_yaml(text)
    except yaml.reader.ReaderError as exc:  # a control character: located by offset, not mark
        character = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise InputError(f"invalid YAML (control character U+{character:04X} is not allowed)",
                         source=p, line=text.count("\n", 0, exc.position) + 1) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML ({problem})", source=p, line=line) from None
    except RecursionError:  # the bound above should stop it first; never a traceback
        raise InputError(f"invalid YAML (nested deeper than {MAX_NESTING} levels)",
                         source=p) from None


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Objects of a JSON Lines file, each with LINE_KEY set; blank lines are skipped. Read line
    by line (a file of any size, each line at most :func:`recallwatch._files.line_cap`)."""
    p = Path(path)
    empty = True
    for number, raw in text_lines(p):
        if not raw.strip():
            continue
        empty = False
        obj = parse_json_line(raw, p, number)
        obj[LINE_KEY] = number
        yield obj
    if empty:
        raise InputError(source=p, expected="at least one JSON object line", found="<empty file>")


def text_lines(path: str | Path, *, gzipped: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a UTF-8 text file, read as a stream (a gzip file
    decompressed on the way when ``gzipped``): each line at most
    :func:`recallwatch._files.line_cap` bytes, a byte-order mark dropped, the line break
    removed (``\n``, ``\r\n``, and the other breaks ``str.splitlines`` knows)."""
    p = Path(path)
    if not p.exists():
        raise InputError(source=p, expected="an existing file", found="<nothing at that path>")
    if p.is_dir():
        raise InputError(source=p, expected="a file", found="<a directory>")
    number = 0
    size = p.stat().st_size if p.is_file() else 0
    # a large file's reading is shown on a terminal (the bar counts the file's bytes)
    show = size >= LARGE_FILE and wanted()
    with progress(size if show else 0, f"reading {p.name}") as advance, \
            open_input(p, "a readable file", gzipped=gzipped) as stream:
        position, done = bytes_read(stream), 0
        for data in capped_lines(stream, p):
            if show and number % 4096 == 0:
                advance(position() - done)
                done = position()
            if number == 0 and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(source=p, line=number + 1, expected="UTF-8 text",
                                 found=f"<byte 0x{data[exc.start]:02x}>") from None
            # a \r, \x0b, \x1c… inside the line breaks it too, as splitlines() did
            for piece in text.splitlines() or [""]:
                number += 1
                yield number, piece


def parse_json_line(raw: str, source: str | Path, line: int) -> dict[str, Any]:
    """One line of a JSON Lines file, which must hold an object."""
    obj = _parse_json(raw, source, line)
    if not isinstance(obj, dict):
        raise InputError(source=source, line=line, expected="a JSON object",
                         found=f"<{_JSON_NAMES.get(type(obj), 'a value')}>")
    return obj


def parse_json_value(raw: str, source: str | Path, line: int | None = None) -> Any:
    """JSON text as plain data, or an InputError that names what is wrong: a syntax error, a
    duplicate key, nesting deeper than :data:`MAX_NESTING`, a number too long to read, a lone
    surrogate escape."""
    return _parse_json(raw, source, line)


_JSON_NAMES = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


class _DuplicateKey(Exception):
    """Raised from inside json's parser: a key seen twice in one object (or the reserved one)."""

    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs) or LINE_KEY in obj:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen or key == LINE_KEY:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _parse_json(text: str, source: str | Path, line: int | None) -> Any:
    """JSON text (a whole file when ``line`` is None, else one JSONL line) as plain data."""
    try:
        obj = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", source=source,
                         line=line or exc.lineno) from None
    except _DuplicateKey as exc:
        what = "reserved key" if exc.key == LINE_KEY else "duplicate key"
        raise InputError(f"invalid JSON ({what} {exc.key!r})", source=source,
                         line=line or _json_problem_line(text)) from None
    except RecursionError:
        raise InputError(f"invalid JSON (nested deeper than {MAX_NESTING} levels)",
                         source=source, line=line or _json_problem_line(text)) from None
    except ValueError as exc:  # the only other one json raises: an over-long number
        long_number = re.search(r"\d{4301}", text)
        at = None if long_number is None else text.count("\n", 0, long_number.start()) + 1
        raise InputError(f"invalid JSON ({_unreadable('', exc)})", source=source,
                         line=line or at) from None
    if _too_deep(obj):
        raise InputError(f"invalid JSON (nested deeper than {MAX_NESTING} levels)",
                         source=source, line=line or _json_problem_line(text))
    if _SURROGATE_ESCAPE.search(text):  # a cheap test first: paired escapes (emoji) are fine
        where = _lone_surrogate(obj, "")
        if where is not None:
            raise InputError(
                source=source, line=line or _surrogate_line(text), field=where or None,
                expected="valid Unicode text", found="<an unpaired UTF-16 surrogate escape>",
                hint="\\ud800-\\udfff escapes must come in pairs, each pair one character")
    return obj


def _too_deep(obj: Any) -> bool:
    """Whether ``obj`` nests containers more than MAX_NESTING deep (breadth first, no
    recursion)."""
    level = [obj] if isinstance(obj, (dict, list)) else []
    for _ in range(MAX_NESTING):
        level = [v for o in level for v in (o.values() if type(o) is dict else o)
                 if type(v) is dict or type(v) is list]
        if not level:
            return False
    return True


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lone_surrogate(obj: Any, path: str) -> str | None:
    """The dotted path of the first string (or key) that is not encodable text, else None."""
    stack: list[tuple[Any, str]] = [(obj, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if not _is_utf8(value):
                return where
        elif isinstance(value, dict):
            for key, item in value.items():
                sub = f"{where}.{key}" if where else str(key)
                if not _is_utf8(key):
                    return where
                stack.append((item, sub))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i + 1}]") for i, item in enumerate(value))
    return None


# Strings (escapes included), brackets, colons and newlines: enough to find where a problem is.
_JSON_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:\n]')


def _json_problem_line(text: str) -> int | None:
    """Line of the first duplicate key or over-deep container in a JSON text (error path only:
    the parser does not say where)."""
    stack: list[set[str] | None] = []  # the keys of each open object; None for an array
    line, key = 1, None
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token == "\n":
            line += 1
        elif token in ("{", "["):
            stack.append(set() if token == "{" else None)
            if len(stack) > MAX_NESTING:
                return line
        elif token in ("}", "]"):
            if stack:
                stack.pop()
        elif token == ":" and key is not None and stack and stack[-1] is not None:
            name = json.loads(key)  # "\u0061" and "a" are the same key
            if name in stack[-1] or name == LINE_KEY:
                return line
            stack[-1].add(name)
        key = token if token.startswith('"') else None
    return None


def _surrogate_line(text: str) -> int | None:
    """Line of the first surrogate escape that is not half of a high-low pair."""
    skip = -1
    for match in _SURROGATE_ESCAPE.finditer(text):
        if match.start() == skip:
            continue
        after = _SURROGATE_ESCAPE.match(text, match.end())
        if match.group()[3] in "89abAB" and after and after.group()[3] in "cdefCDEF":
            skip = after.start()
            continue
        return text.count("\n", 0, match.start()) + 1
    return None


def without_lines(value: Any) -> Any:
    """A value read by :func:`load_structured` without the line numbers it adds to mappings
    (what is recorded and hashed), at every depth."""
    if isinstance(value, Mapping):
        return {k: without_lines(v) for k, v in value.items() if k != LINE_KEY}
    if isinstance(value, list):
        return [without_lines(v) for v in value]
    return value
