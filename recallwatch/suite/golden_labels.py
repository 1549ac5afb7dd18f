"""Keeping a golden set's labels true to the chunks: ``golden check`` (does every chunk id and
content anchor resolve against a store or corpus?) and ``golden migrate`` (rewrite chunk ids into
anchors, or into the ids of a new chunking, reporting every label that is ambiguous or lost)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from recallwatch._registry import suggest
from recallwatch.errors import DatasetError, InputError
from recallwatch.formats.fields import line_of
from recallwatch.formats.golden import Anchor, GoldenQuery, GoldenSet
from recallwatch.formats.structured import load_structured
from recallwatch.records import Chunk
from recallwatch.suite.anchors import AnchorResolution, closest_chunks, locate

__all__ = ["LabelCheck", "Migration", "check_labels", "load_chunks", "migrate_labels",
           "write_golden"]

Status = Literal["ok", "ambiguous", "split", "lost"]


@contextmanager
def load_chunks(where: str | Path) -> Iterator[list[Chunk]]:
    """Every chunk of a corpus file, or of a store (a URI with a scheme, opened read-only)."""
    text = str(where)
    if "://" in text:
        from recallwatch.stores import open_store

        store = open_store(text)
        try:
            yield store.chunks()
        finally:
            store.close()
        return
    from recallwatch.formats.corpus import read_corpus

    yield list(read_corpus(Path(text)))


@dataclass(frozen=True)
class LabelCheck:
    """One label of one query, and what it is against the chunks (``line``: where it is)."""

    query: str
    label: str  # a chunk id, or "doc_id: quote…"
    status: Status
    detail: str
    line: int | None = None
    resolution: AnchorResolution | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query, "label": self.label, "status": self.status,
                               "detail": self.detail, "line": self.line}
        if self.resolution is not None:
            out["resolution"] = self.resolution.to_dict()
        return out


def _lines(golden: GoldenSet) -> dict[str, int | None]:
    """Query id → the line it starts on (the parsed set keeps no lines; the file does)."""
    if not golden.source:
        return {}
    try:
        data = load_structured(Path(golden.source))
    except (OSError, InputError):
        return {}
    queries = data.get("queries", []) if isinstance(data, dict) else data
    return {str(q.get("id")): line_of(q) for q in queries if isinstance(q, dict)}


def _label(a: Anchor) -> str:
    quote = " ".join(a.quote.split())
    return f"{a.doc_id}: {quote[:50] + '…' if len(quote) > 50 else quote}"


def check_labels(golden: GoldenSet, chunks: Sequence[Chunk]) -> list[LabelCheck]:
    """Every chunk id and anchor of ``golden`` against ``chunks``: found (``ok``; ``split`` or
    ``ambiguous`` for an anchor that resolves but not to one chunk) or ``lost``, with the closest
    chunks by content (for an anchor) or by name (for an id)."""
    by_id = {c.id: c for c in chunks}
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id or "", []).append(c)
    lines = _lines(golden)
    out: list[LabelCheck] = []
    for q in golden.queries:
        line = lines.get(q.id)
        for cid in q.expected:
            if cid in by_id:
                out.append(LabelCheck(q.id, cid, "ok", "chunk exists", line))
            else:
                near = suggest(cid, list(by_id)).strip() or "no chunk with a similar id"
                out.append(LabelCheck(q.id, cid, "lost", f"no chunk with this id; {near}", line))
        for a in q.anchors:
            r = locate(a, by_doc.get(a.doc_id, []))
            if r.kind == "unresolved" and a.doc_id not in by_doc:
                r = replace(r, closest=tuple(closest_chunks(a.quote, chunks)))
                detail = f"no chunk of document {a.doc_id}; " + r.describe().split("; ", 1)[1]
            else:
                detail = r.describe()
            status: Status = {"whole": "ambiguous" if r.ambiguous else "ok", "split": "split",
                              "unresolved": "lost"}[r.kind]
            out.append(LabelCheck(q.id, _label(a), status, detail, line, r))
    return out


@dataclass(frozen=True)
class Migration:
    golden: GoldenSet
    labels: list[LabelCheck]

    @property
    def lost(self) -> list[LabelCheck]:
        return [x for x in self.labels if x.status == "lost"]

    @property
    def ambiguous(self) -> list[LabelCheck]:
        return [x for x in self.labels if x.status == "ambiguous"]


def _next_version(version: str) -> str:
    return str(int(version) + 1) if version.isdigit() else f"{version}.1"


def migrate_labels(golden: GoldenSet, old: Sequence[Chunk], new: Sequence[Chunk] | None, *,
                   into: Literal["anchors", "ids"] = "anchors",
                   version: str | None = None) -> Migration:
    """Rewrite every chunk id of ``golden`` (a chunk of ``old``) as an anchor quoting that
    chunk's content, or (``into="ids"``) as the ids of the ``new`` chunks that hold it.

    With ``new``, each label is resolved there and reported: ``ok``, ``split`` (all the new
    chunks are expected), ``ambiguous`` (several new chunks hold it whole: it stays an anchor,
    which counts whichever ranks best) or ``lost`` (not found: kept as an anchor quoting the old
    text, to be fixed by hand). Existing anchors are carried over the same way. The version is
    bumped (or set), so the set's hash and version both say it changed."""
    if into == "ids" and new is None:
        raise InputError(field="--to", expected="the new corpus or store to take the new ids from",
                         found="<nothing>")
    old_by_id = {c.id: c for c in old}
    new_by_doc: dict[str, list[Chunk]] = {}
    for c in new or ():
        new_by_doc.setdefault(c.doc_id or "", []).append(c)
    lines = _lines(golden)
    labels: list[LabelCheck] = []
    queries: list[GoldenQuery] = []
    for q in golden.queries:
        line = lines.get(q.id)
        anchors: list[Anchor] = []
        for cid in q.expected:
            chunk = old_by_id.get(cid)
            if chunk is None:
                raise DatasetError(
                    f"chunk {cid!r} is not in the old corpus", source=golden.source, line=line,
                    record=q.id, field="expected",
                    hint="--from must be the corpus or store the golden set was written for")
            if not chunk.doc_id:
                raise DatasetError(
                    f"chunk {cid!r} has no doc_id, so no anchor can name its document",
                    source=golden.source, line=line, record=q.id, field="expected",
                    hint="give the old corpus's chunks a doc_id")
            anchors.append(Anchor(chunk.doc_id, chunk.content or chunk.text, cid in q.gold))
        anchors.extend(q.anchors)
        ids: list[str] = []
        gold: list[str] = []
        kept: list[Anchor] = []
        for a in dict.fromkeys(anchors):
            if new is None:
                kept.append(a)
                labels.append(LabelCheck(q.id, _label(a), "ok", "rewritten as an anchor", line))
                continue
            r = locate(a, new_by_doc.get(a.doc_id, []))
            status: Status = {"whole": "ambiguous" if r.ambiguous else "ok", "split": "split",
                              "unresolved": "lost"}[r.kind]
            labels.append(LabelCheck(q.id, _label(a), status, r.describe(), line, r))
            if into == "ids" and r.kind in ("whole", "split") and not r.ambiguous:
                ids.extend(r.chunk_ids)
                gold.extend(r.chunk_ids if a.gold else ())
            else:
                kept.append(a)
        ids = list(dict.fromkeys(ids))
        queries.append(replace(q, expected=tuple(ids), gold=tuple(dict.fromkeys(gold)),
                               anchors=tuple(kept)))
    migrated = replace(golden, queries=tuple(queries),
                       version=version or _next_version(golden.version))
    return Migration(migrated, labels)


def write_golden(golden: GoldenSet, path: str | Path) -> None:
    """Write a golden set as YAML (or JSON for a ``.json`` path), whole or not at all."""
    import json

    import yaml

    from recallwatch._files import write_atomic

    data = golden.to_dict()
    target = Path(path)
    if target.suffix == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100)
    write_atomic(target, text)
