"""The golden dataset: queries with the chunk ids they must retrieve."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch._hashing import canonical_hash  # re-exported: the dataset hash's home
from recallwatch.errors import InputError
from recallwatch.formats.fields import bounded, check_keys, line_of, shown, text_id
from recallwatch.formats.structured import load_structured

__all__ = ["MAX_TOP_K", "GoldenQuery", "GoldenSet", "canonical_hash", "load_golden"]

# A gate scores the top K by hand-written expectations; beyond this a K is a typo, and it would
# reach the store as a search depth.
MAX_TOP_K = 10_000

_TOP_KEYS = {"name", "version", "top_k", "queries", "description"}
_QUERY_KEYS = {"id", "text", "expected", "gold", "domain", "tags", "top_k", "language", "source"}


@dataclass(frozen=True)
class GoldenQuery:
    id: str
    text: str
    expected: tuple[str, ...]
    gold: tuple[str, ...] = ()
    domain: str | None = None
    tags: tuple[str, ...] = ()
    top_k: int | None = None  # None: the dataset's (or the policy's) top_k
    extra: dict[str, str] = field(default_factory=dict)  # language, source: for group gaps

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "text": self.text, "expected": list(self.expected)}
        if self.gold:
            out["gold"] = list(self.gold)
        if self.domain is not None:
            out["domain"] = self.domain
        if self.tags:
            out["tags"] = list(self.tags)
        if self.top_k is not None:
            out["top_k"] = self.top_k
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class GoldenSet:
    name: str
    version: str
    queries: tuple[GoldenQuery, ...]
    top_k: int = 10
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "top_k": self.top_k,
                "queries": [q.to_dict() for q in self.queries]}

    @property
    def hash(self) -> str:
        return canonical_hash(self.to_dict())

    def query(self, query_id: str) -> GoldenQuery:
        for q in self.queries:
            if q.id == query_id:
                return q
        raise KeyError(query_id)

    @classmethod
    def from_dict(cls, data: Any, *, source: str | Path = "<golden>") -> GoldenSet:
        return _parse(data, Path(str(source)))


def load_golden(path: str | Path) -> GoldenSet:
    """Read a golden dataset from YAML, JSON or JSONL, validating every record."""
    p = Path(path)
    data = load_structured(p)
    if isinstance(data, list):  # JSONL (or a bare list): records are queries, name from the file
        data = {"name": p.stem, "version": "1", "queries": data}
    return _parse(data, p)


def _parse(data: Any, source: Path) -> GoldenSet:
    if not isinstance(data, dict):
        raise InputError(source=source, expected="a mapping with name, version and queries",
                         found=type(data).__name__)
    check_keys(data, _TOP_KEYS, source=source)
    name = _string(data.get("name", source.stem), source, line_of(data), None, "name")
    version = _string(data.get("version", "1"), source, line_of(data), None, "version")
    top_k = _top_k(data.get("top_k", 10), source, line_of(data), None)
    raw_queries = data.get("queries")
    if not isinstance(raw_queries, list) or not raw_queries:
        raise InputError(source=source, line=line_of(data), field="queries",
                         expected="a non-empty list of queries", found=shown(raw_queries))
    queries: list[GoldenQuery] = []
    seen: dict[str, int | None] = {}
    for index, raw in enumerate(raw_queries, start=1):
        q = _parse_query(raw, source, index)
        if q.id in seen:
            raise InputError(
                "duplicate query id", source=source, line=line_of(raw), record=q.id, field="id",
                hint=f"first defined at line {seen[q.id]}" if seen[q.id] else None,
            )
        seen[q.id] = line_of(raw)
        queries.append(q)
    return GoldenSet(name=name, version=version, queries=tuple(queries), top_k=top_k,
                     source=str(source))


def _parse_query(raw: Any, source: Path, index: int) -> GoldenQuery:
    if not isinstance(raw, dict):
        raise InputError(source=source, record=f"#{index}", expected="a query mapping",
                         found=shown(raw))
    line = line_of(raw)
    qid = text_id(raw.get("id"))
    if qid is None:
        raise InputError(source=source, line=line, record=f"#{index}", field="id",
                         expected="a non-empty query id", found=shown(raw.get("id")))
    check_keys(raw, _QUERY_KEYS, source=source, record=qid)
    text = _string(raw.get("text"), source, line, qid, "text")
    expected = _ids(raw.get("expected"), source, line, qid, "expected", required=True)
    if len(set(expected)) != len(expected):
        dup = next(x for x in expected if expected.count(x) > 1)
        raise InputError(f"chunk {dup!r} is listed twice", source=source, line=line, record=qid,
                         field="expected")
    gold = _ids(raw.get("gold", []), source, line, qid, "gold", required=False)
    outside = [g for g in gold if g not in expected]
    if outside:
        raise InputError(source=source, line=line, record=qid, field="gold",
                         expected="a subset of expected", found=outside)
    domain = raw.get("domain")
    if domain is not None:
        domain = _string(domain, source, line, qid, "domain")
    tags = _ids(raw.get("tags", []), source, line, qid, "tags", required=False)
    top_k = raw.get("top_k")
    extra = {k: _string(raw[k], source, line, qid, k) for k in ("language", "source") if k in raw}
    return GoldenQuery(
        id=qid, text=text, expected=tuple(expected), gold=tuple(gold), domain=domain,
        tags=tuple(tags), top_k=None if top_k is None else _top_k(top_k, source, line, qid),
        extra=extra,
    )


def _string(value: Any, source: Path, line: int | None, record: str | None, fld: str) -> str:
    text = text_id(value)
    if text is None:
        raise InputError(source=source, line=line, record=record, field=fld,
                         expected="a non-empty string", found=shown(value),
                         hint=_QUOTE_HINT if isinstance(value, float) else None)
    return text


def _ids(value: Any, source: Path, line: int | None, record: str, fld: str, *,
         required: bool) -> list[str]:
    if not isinstance(value, list) or (required and not value):
        what = "a non-empty list of chunk ids" if required else "a list of strings"
        raise InputError(source=source, line=line, record=record, field=fld, expected=what,
                         found=shown(value))
    out = []
    for item in value:
        text = text_id(item)
        if text is None:
            raise InputError(source=source, line=line, record=record, field=fld,
                             expected="non-empty strings", found=shown(item),
                             hint=_QUOTE_HINT if isinstance(item, float) else None)
        out.append(text)
    return out


# A YAML number is read as a number: 1.10 would silently become "1.1".
_QUOTE_HINT = "quote it, so that it is read as written"


def _top_k(value: Any, source: Path, line: int | None, record: str | None) -> int:
    top_k: int = bounded(value, 1, MAX_TOP_K, source=source, line=line, record=record,
                         field="top_k")
    return top_k


def expected_ids(golden: GoldenSet) -> Sequence[str]:
    """Every chunk id the dataset expects, each once, in first-seen order."""
    return list(dict.fromkeys(cid for q in golden.queries for cid in q.expected))
