"""The golden dataset: queries with what they must retrieve — chunk ids, or content anchors (a
passage of a source document, ``{doc_id, quote}``) that survive a re-chunking — and groups of
alternatives: ``{any: [...]}`` (any one member answers) or ``{at_least: N, of: [...]}``."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from recallwatch._hashing import canonical_hash  # re-exported: the dataset hash's home
from recallwatch.errors import InputError
from recallwatch.formats.fields import bounded, check_keys, iso_date, line_of, shown, text_id
from recallwatch.formats.structured import load_structured
from recallwatch.records import group_problem

__all__ = ["MAX_TOP_K", "SPLITS", "Alternatives", "Anchor", "GoldenQuery", "GoldenSet",
           "canonical_hash", "load_golden", "normalise_quote"]

# A gate scores the top K by hand-written expectations; beyond this a K is a typo, and it would
# reach the store as a search depth.
MAX_TOP_K = 10_000

_TOP_KEYS = {"name", "version", "top_k", "queries", "description", "as_of"}
_QUERY_KEYS = {"id", "text", "expected", "gold", "domain", "tags", "top_k", "language", "source",
               "split", "frequency", "groups", "reference"}
# A query's part: policies and thresholds are calibrated on `tune`, the gate's verdict is
# computed on `test` (queries that no calibration has seen).
SPLITS = ("tune", "test")
_ANCHOR_KEYS = {"doc_id", "quote", "gold"}
_ANY_KEYS = {"any"}
_AT_LEAST_KEYS = {"at_least", "of"}


def normalise_quote(text: str) -> str:
    """How a quote and a chunk's text are compared: Unicode NFC, case folded, every run of
    whitespace one space (a re-chunker may rewrap lines or drop the space between two chunks)."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


@dataclass(frozen=True)
class Anchor:
    """An expected passage rather than an expected chunk: resolved at run time to the current
    chunks of document ``doc_id`` that contain ``quote`` (exact, or whitespace/case-normalised)."""

    doc_id: str
    quote: str
    gold: bool = False  # the chunks it resolves to are Gold (a curated synthesis)

    @property
    def key(self) -> str:
        """What identifies the label across runs: its document and its normalised quote."""
        return f"{self.doc_id}::{normalise_quote(self.quote)}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"doc_id": self.doc_id, "quote": self.quote}
        if self.gold:
            out["gold"] = True
        return out


@dataclass(frozen=True)
class Alternatives:
    """A group of ``expected``: chunk ids or anchors of which ``need`` must be in the top K
    (``{any: [...]}``: one; ``{at_least: N, of: [...]}``: N). The group counts as ``need``
    expected items, its ``need`` best-ranked members; the others are relevant, never noise."""

    members: tuple[str | Anchor, ...]
    need: int = 1
    form: str = "any"  # how the file wrote it: "any" or "at_least"

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m for m in self.members if isinstance(m, str))

    @property
    def anchors(self) -> tuple[Anchor, ...]:
        return tuple(m for m in self.members if isinstance(m, Anchor))

    @property
    def key(self) -> str:
        return "|".join(m if isinstance(m, str) else m.key for m in self.members)

    def describe(self) -> str:
        """The group in words: ``any of a, b`` or ``at least 2 of a, b, c``."""
        names = ", ".join(m if isinstance(m, str) else f"{m.doc_id}: {m.quote[:40]!r}"
                          for m in self.members)
        return f"any of {names}" if self.need == 1 else f"at least {self.need} of {names}"

    def to_dict(self) -> dict[str, Any]:
        members = [m if isinstance(m, str) else m.to_dict() for m in self.members]
        if self.form == "any":
            return {"any": members}
        return {"at_least": self.need, "of": members}


@dataclass(frozen=True)
class GoldenQuery:
    id: str
    text: str
    expected: tuple[str, ...]  # the chunk ids listed in `expected` (anchors are kept apart)
    gold: tuple[str, ...] = ()
    domain: str | None = None
    tags: tuple[str, ...] = ()
    top_k: int | None = None  # None: the dataset's (or the policy's) top_k
    extra: dict[str, str] = field(default_factory=dict)  # language, source: for group gaps
    split: str | None = None  # "tune" | "test" | None (not assigned)
    frequency: int | None = None  # how often the query was asked, when sampled from a log
    anchors: tuple[Anchor, ...] = ()  # the content anchors listed in `expected`
    # The asking user's groups: a chunk in the top K whose acl names none of them is a
    # permission leak. None: the query is not checked for permissions.
    groups: tuple[str, ...] | None = None
    # Groups of alternatives listed in `expected` ({any: [...]}, {at_least: N, of: [...]}).
    alternatives: tuple[Alternatives, ...] = ()
    # The right answer in words, for answer-level evaluation (gate --answers/--generator):
    # an answer's correctness is measured against it (else against the anchors' quotes).
    reference: str | None = None

    @property
    def all_expected(self) -> tuple[str, ...]:
        """Every chunk id the query names as answering it: required ones, then the members of
        its groups of alternatives (what is relevant to it, e.g. in qrels or a judging pool)."""
        return tuple(dict.fromkeys([*self.expected, *(c for g in self.alternatives
                                                      for c in g.ids)]))

    def to_dict(self) -> dict[str, Any]:
        # Ids first, then anchors, then groups: a set without anchors or groups hashes exactly as
        # before they existed.
        out: dict[str, Any] = {"id": self.id, "text": self.text,
                               "expected": [*self.expected, *(a.to_dict() for a in self.anchors),
                                            *(g.to_dict() for g in self.alternatives)]}
        if self.gold:
            out["gold"] = list(self.gold)
        if self.domain is not None:
            out["domain"] = self.domain
        if self.tags:
            out["tags"] = list(self.tags)
        if self.top_k is not None:
            out["top_k"] = self.top_k
        out.update(self.extra)
        if self.split is not None:
            out["split"] = self.split
        if self.frequency is not None:
            out["frequency"] = self.frequency
        if self.groups is not None:
            out["groups"] = list(self.groups)
        if self.reference is not None:
            out["reference"] = self.reference
        return out


@dataclass(frozen=True)
class GoldenSet:
    name: str
    version: str
    queries: tuple[GoldenQuery, ...]
    top_k: int = 10
    source: str | None = None
    # The day the questions and their expected chunks were written for: the gate judges the
    # chunks' validity windows on it (rather than today), so that a set's story does not change
    # with the calendar. Not part of the hash: it changes no expectation.
    as_of: date | None = None

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

    @property
    def has_split(self) -> bool:
        """True when at least one query is assigned to ``tune`` or ``test``."""
        return any(q.split is not None for q in self.queries)

    def part(self, split: str) -> GoldenSet:
        """The same set restricted to the queries of one split (``tune`` or ``test``)."""
        return replace(self, queries=tuple(q for q in self.queries if q.split == split))

    @classmethod
    def from_dict(cls, data: Any, *, source: str | Path = "<golden>",
                  unlabelled: bool = False) -> GoldenSet:
        return _parse(data, Path(str(source)), unlabelled)


def load_golden(path: str | Path, *, unlabelled: bool = False) -> GoldenSet:
    """Read a golden dataset from YAML, JSON or JSONL, validating every record.

    ``unlabelled=True`` accepts queries whose ``expected`` list is still empty (a set sampled
    from a log, before judging); the gate never reads a set that way. ``irds:DATASET_ID`` or
    ``beir:DIR[#split]`` is a public collection's queries, each expecting the documents judged
    relevant (see :mod:`recallwatch.formats.collections`)."""
    from recallwatch.formats.collections import golden_data, is_collection, open_collection

    if is_collection(path):
        collection = open_collection(path)
        return _parse(golden_data(collection), Path(collection.name), unlabelled)
    p = Path(path)
    data = load_structured(p)
    if isinstance(data, list):  # JSONL (or a bare list): records are queries, name from the file
        data = {"name": p.stem, "version": "1", "queries": data}
    return _parse(data, p, unlabelled)


def _parse(data: Any, source: Path, unlabelled: bool = False) -> GoldenSet:
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
        q = _parse_query(raw, source, index, unlabelled)
        if q.id in seen:
            raise InputError(
                "duplicate query id", source=source, line=line_of(raw), record=q.id, field="id",
                hint=f"first defined at line {seen[q.id]}" if seen[q.id] else None,
            )
        seen[q.id] = line_of(raw)
        queries.append(q)
    as_of = iso_date(data.get("as_of"), "as_of", {"source": source, "line": line_of(data)})
    return GoldenSet(name=name, version=version, queries=tuple(queries), top_k=top_k,
                     source=str(source), as_of=as_of)


def _parse_query(raw: Any, source: Path, index: int, unlabelled: bool = False) -> GoldenQuery:
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
    raw_expected = raw.get("expected")
    if not isinstance(raw_expected, list) or (not raw_expected and not unlabelled):
        raise InputError(source=source, line=line, record=qid, field="expected",
                         expected="a non-empty list of chunk ids", found=shown(raw_expected),
                         hint=_UNLABELLED_HINT if raw_expected == [] else
                         "an entry may also be a content anchor {doc_id, quote} or a group of "
                         "alternatives {any: [...]}")
    alternatives = tuple(_alternatives(a, source, line, qid) for a in raw_expected
                         if isinstance(a, dict) and _is_group(a))
    anchors = tuple(_anchor(a, source, line, qid) for a in raw_expected
                    if isinstance(a, dict) and not _is_group(a))
    keys = [a.key for a in anchors]
    if len(set(keys)) != len(keys):
        twice = next(a for a in anchors if keys.count(a.key) > 1)
        raise InputError(f"anchor {twice.quote[:40]!r} of document {twice.doc_id!r} is listed "
                         "twice",
                         source=source, line=line, record=qid, field="expected")
    expected = _ids([e for e in raw_expected if not isinstance(e, dict)], source, line, qid,
                    "expected", required=False)
    if len(set(expected)) != len(expected):
        dup = next(x for x in expected if expected.count(x) > 1)
        raise InputError(f"chunk {dup!r} is listed twice", source=source, line=line, record=qid,
                         field="expected")
    _check_members_once(expected, anchors, alternatives, source, line, qid)
    gold = _ids(raw.get("gold", []), source, line, qid, "gold", required=False)
    members = {c for g in alternatives for c in g.ids}
    outside = [g for g in gold if g not in expected and g not in members]
    if outside:
        raise InputError(source=source, line=line, record=qid, field="gold",
                         expected="a subset of expected (its chunk ids, or members of its "
                         "groups of alternatives)", found=outside)
    domain = raw.get("domain")
    if domain is not None:
        domain = _string(domain, source, line, qid, "domain")
    tags = _ids(raw.get("tags", []), source, line, qid, "tags", required=False)
    top_k = raw.get("top_k")
    extra = {k: _string(raw[k], source, line, qid, k) for k in ("language", "source") if k in raw}
    split = raw.get("split")
    if split is not None and split not in SPLITS:
        raise InputError(source=source, line=line, record=qid, field="split",
                         expected="tune or test", found=shown(split),
                         hint="`recallwatch golden split` assigns them")
    frequency = raw.get("frequency")
    if frequency is not None:
        frequency = bounded(frequency, 1, 2**62, source=source, line=line, record=qid,
                            field="frequency")
    groups = raw.get("groups")
    if groups is not None:
        if not isinstance(groups, list):
            raise InputError(source=source, line=line, record=qid, field="groups",
                             expected="a list of the asking user's groups", found=shown(groups))
        for group in groups:
            problem = group_problem(group)
            if problem is not None:
                raise InputError(source=source, line=line, record=qid, field="groups",
                                 expected=f"group names: {problem}", found=shown(group))
        groups = tuple(dict.fromkeys(groups))
    reference = raw.get("reference")
    if reference is not None:
        reference = _string(reference, source, line, qid, "reference")
    return GoldenQuery(
        id=qid, text=text, expected=tuple(expected), gold=tuple(gold), domain=domain,
        tags=tuple(tags), top_k=None if top_k is None else _top_k(top_k, source, line, qid),
        extra=extra, split=split, frequency=frequency, anchors=anchors, groups=groups,
        alternatives=alternatives, reference=reference,
    )


def _is_group(raw: dict[str, Any]) -> bool:
    return "any" in raw or "at_least" in raw or "of" in raw


def _alternatives(raw: dict[str, Any], source: Path, line: int | None,
                  qid: str) -> Alternatives:
    """``{any: [...]}`` or ``{at_least: N, of: [...]}``: members are chunk ids or anchors."""
    form = "any" if "any" in raw else "at_least"
    check_keys(raw, _ANY_KEYS if form == "any" else _AT_LEAST_KEYS, source=source, record=qid)
    fld = f"expected.{'any' if form == 'any' else 'of'}"
    listed = raw.get("any" if form == "any" else "of")
    if not isinstance(listed, list) or not listed:
        raise InputError(source=source, line=line, record=qid, field=fld,
                         expected="a non-empty list of chunk ids or content anchors, any of "
                         "which answers the query", found=shown(listed))
    members: list[str | Anchor] = []
    for item in listed:
        if isinstance(item, dict):
            if _is_group(item):
                raise InputError("a group inside a group", source=source, line=line,
                                 record=qid, field=fld,
                                 hint="list every alternative of a group in one group")
            members.append(_anchor(item, source, line, qid))
        else:
            members.extend(_ids([item], source, line, qid, fld, required=False))
    need = 1
    if form == "at_least":
        need = bounded(raw.get("at_least"), 1, len(members), source=source, line=line,
                       record=qid, field="expected.at_least")
    return Alternatives(members=tuple(members), need=need, form=form)


def _check_members_once(expected: Sequence[str], anchors: Sequence[Anchor],
                        alternatives: Sequence[Alternatives], source: Path, line: int | None,
                        qid: str) -> None:
    """A chunk or anchor is named once per query: as required, or in one group."""
    seen = {**{c: "required" for c in expected}, **{a.key: "required" for a in anchors}}
    for number, group in enumerate(alternatives, start=1):
        for m in group.members:
            key, name = (m, repr(m)) if isinstance(m, str) else (
                m.key, f"anchor {m.quote[:40]!r} of document {m.doc_id!r}")
            if key in seen:
                where = ("as a required chunk" if seen[key] == "required"
                         else f"in group {seen[key]}")
                raise InputError(f"{name} is listed {where} and again in group {number}",
                                 source=source, line=line, record=qid, field="expected",
                                 hint="a required chunk must be found; a group's members are "
                                 "alternatives: list each in one place")
            seen[key] = str(number)


def _anchor(raw: dict[str, Any], source: Path, line: int | None, qid: str) -> Anchor:
    check_keys(raw, _ANCHOR_KEYS, source=source, record=qid)
    doc_id = text_id(raw.get("doc_id"))
    if doc_id is None:
        raise InputError(source=source, line=line, record=qid, field="expected.doc_id",
                         expected="the id of the source document the quote comes from",
                         found=shown(raw.get("doc_id")))
    quote = raw.get("quote")
    if not isinstance(quote, str) or not normalise_quote(quote):
        raise InputError(source=source, line=line, record=qid, field="expected.quote",
                         expected="a non-empty passage of the document, as text",
                         found=shown(quote))
    gold = raw.get("gold", False)
    if not isinstance(gold, bool):
        raise InputError(source=source, line=line, record=qid, field="expected.gold",
                         expected="true or false", found=shown(gold))
    return Anchor(doc_id=doc_id, quote=quote, gold=gold)


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
        unlabelled = required and value == []
        raise InputError(source=source, line=line, record=record, field=fld, expected=what,
                         found=shown(value), hint=_UNLABELLED_HINT if unlabelled else None)
    out = []
    for item in value:
        text = text_id(item)
        if text is None:
            raise InputError(source=source, line=line, record=record, field=fld,
                             expected="non-empty strings", found=shown(item),
                             hint=_QUOTE_HINT if isinstance(item, float) else None)
        out.append(text)
    return out


# An empty list is a query not judged yet (e.g. one `recallwatch golden sample` drew from a log).
_UNLABELLED_HINT = "the query is not labelled yet: list the chunks that answer it"

# A YAML number is read as a number: 1.10 would silently become "1.1".
_QUOTE_HINT = "quote it, so that it is read as written"


def _top_k(value: Any, source: Path, line: int | None, record: str | None) -> int:
    top_k: int = bounded(value, 1, MAX_TOP_K, source=source, line=line, record=record,
                         field="top_k")
    return top_k


def expected_ids(golden: GoldenSet) -> Sequence[str]:
    """Every chunk id the dataset names (required or alternative), each once, in first-seen
    order."""
    return list(dict.fromkeys(cid for q in golden.queries for cid in q.all_expected))
