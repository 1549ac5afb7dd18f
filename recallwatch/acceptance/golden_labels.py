"""Keeping a golden set's labels true to the chunks: ``golden check`` (does every chunk id and
content anchor resolve against a store or corpus?) and ``golden migrate`` (rewrite chunk ids into
anchors, or into the ids of a new chunking, reporting every label that is ambiguous or lost)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from recallwatch._registry import suggest
from recallwatch.acceptance.anchors import AnchorResolution, closest_chunks, locate
from recallwatch.errors import DatasetError, InputError
from recallwatch.formats.duplicates import find_duplicates
from recallwatch.formats.fields import line_of
from recallwatch.formats.golden import Alternatives, Anchor, GoldenQuery, GoldenSet
from recallwatch.formats.sentences import split_sentences
from recallwatch.formats.structured import load_structured
from recallwatch.records import Chunk

if TYPE_CHECKING:
    from recallwatch.embedders.base import Embedder

__all__ = ["LabelCheck", "Migration", "QuoteChoice", "check_labels", "load_chunks",
           "migrate_labels", "quote_embedder", "write_golden"]

Status = Literal["ok", "ambiguous", "split", "lost"]
QuoteMode = Literal["chunk", "sentence"]


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


def quote_embedder(spec: str | None, old: str | Path) -> Embedder:
    """The embedder that picks the quoted sentences: ``spec`` if given, else the one that built
    the old store (a URI), else the default."""
    from recallwatch.embedders import embedder_for_store, embedder_from_spec, get_embedder

    if spec is not None:
        return embedder_from_spec(spec)
    if "://" in str(old):
        from recallwatch.stores import open_store

        store = open_store(str(old))
        try:
            return embedder_for_store(store)
        finally:
            store.close()
    return get_embedder()


@dataclass(frozen=True)
class LabelCheck:
    """One label of one query, and what it is against the chunks (``line``: where it is)."""

    query: str
    label: str  # a chunk id, or "doc_id: quote…"
    status: Status
    detail: str
    line: int | None = None
    resolution: AnchorResolution | None = None
    # the chunks with the same text as this chunk id, under other ids (its identical twins)
    twins: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query, "label": self.label, "status": self.status,
                               "detail": self.detail, "line": self.line}
        if self.resolution is not None:
            out["resolution"] = self.resolution.to_dict()
        if self.twins:
            out["twins"] = list(self.twins)
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


def _clip(quote: str, width: int = 50) -> str:
    text = " ".join(quote.split())
    return text[:width] + "…" if len(text) > width else text


def _label(a: Anchor) -> str:
    return f"{a.doc_id}: {_clip(a.quote)}"


def check_labels(golden: GoldenSet, chunks: Sequence[Chunk]) -> list[LabelCheck]:
    """Every chunk id and anchor of ``golden`` against ``chunks``: found (``ok``; ``split`` or
    ``ambiguous`` for an anchor that resolves but not to one chunk) or ``lost``, with the closest
    chunks by content (for an anchor) or by name (for an id). A chunk id found is listed with
    its identical twins, if any (chunks of the same text under other ids)."""
    by_id = {c.id: c for c in chunks}
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id or "", []).append(c)
    twins = find_duplicates(chunks, near=False).twins()
    lines = _lines(golden)
    out: list[LabelCheck] = []
    for q in golden.queries:
        line = lines.get(q.id)
        out += [_id_check(q, cid, by_id, twins, line) for cid in q.all_expected]
        for a in (*q.anchors, *(a for g in q.alternatives for a in g.anchors)):
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


def _id_check(q: GoldenQuery, cid: str, by_id: Mapping[str, Chunk],
              twins: Mapping[str, tuple[str, ...]], line: int | None) -> LabelCheck:
    """One chunk id of a query: found (said with its group and its identical twins) or lost."""
    if cid not in by_id:
        near = suggest(cid, list(by_id)).strip() or "no chunk with a similar id"
        return LabelCheck(q.id, cid, "lost", f"no chunk with this id; {near}", line)
    group = next((g.describe() for g in q.alternatives if cid in g.ids), None)
    detail = "chunk exists" if group is None else f"chunk exists; an alternative: {group} answers"
    own = twins.get(cid, ())
    if own:
        detail += (f"; identical text in {', '.join(own)}: the gate counts any of them in the "
                   "top K as this chunk (policy twins_count_as_found)")
        both = [t for t in own if t in q.expected and cid in q.expected]
        if both:
            detail += (f"; {', '.join(both)} is listed as required too, so both must be found: "
                       f"list them as {{any: [{cid}, {', '.join(both)}]}}")
    return LabelCheck(q.id, cid, "ok", detail, line, twins=own)


@dataclass(frozen=True)
class QuoteChoice:
    """What an anchor made from a chunk id quotes (``--quote sentence``): sentence ``position``
    (1-based) of the chunk's ``sentences``, chosen for its ``similarity`` to the query; ``why``
    says when the whole chunk was quoted instead."""

    query: str
    chunk_id: str
    quote: str
    position: int | None = None
    sentences: int = 1
    similarity: float | None = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "chunk": self.chunk_id, "quote": self.quote,
                "position": self.position, "sentences": self.sentences,
                "similarity": None if self.similarity is None else round(self.similarity, 4),
                "why": self.why}

    def describe(self) -> str:
        if self.position is None:
            return f"{self.chunk_id}: whole chunk ({self.why})"
        return (f"{self.chunk_id}: sentence {self.position}/{self.sentences} "
                f"(similarity {self.similarity:.3f}): {_clip(self.quote, 70)}")


# A shorter sentence is a heading or a label ("Período de prueba.") more often than a fact, and
# other documents may hold it too, so fact recall would find it in their chunks.
MIN_QUOTE_WORDS = 5
_WORD = re.compile(r"\w+")


def _is_table(chunk: Chunk) -> bool:
    return chunk.kind == "table" or bool(chunk.description)


def _choose_quotes(q: GoldenQuery, chunks: Sequence[Chunk], doc_chunks: dict[str, list[Chunk]],
                   embedder: Embedder) -> list[QuoteChoice]:
    """For each expected chunk of ``q``, the sentence most similar to the query text (cosine of
    the embedder's query and document vectors; the first of equals). Only sentences of
    ``MIN_QUOTE_WORDS`` words or more found in that chunk alone among its document's chunks
    qualify, so the anchor resolves to the very chunk it came from; a table, or a chunk with no
    such sentence, is quoted whole."""
    import numpy as np

    out: list[QuoteChoice] = []
    wanted: list[tuple[Chunk, list[str], list[int]]] = []
    for c in chunks:
        whole = c.content or c.text
        if _is_table(c):
            out.append(QuoteChoice(q.id, c.id, whole, why="a table is one fact"))
            continue
        sentences = split_sentences(whole)
        own = [i for i, s in enumerate(sentences)
               if len(_WORD.findall(s)) >= MIN_QUOTE_WORDS
               and locate(Anchor(c.doc_id or "", s), doc_chunks[c.doc_id or ""],
                          split=False).chunk_ids == (c.id,)]
        if len(sentences) < 2 or not own:
            why = ("one sentence" if len(sentences) < 2 else
                   f"no sentence of {MIN_QUOTE_WORDS} words or more is in this chunk alone")
            out.append(QuoteChoice(q.id, c.id, whole, why=why))
            continue
        out.append(QuoteChoice(q.id, c.id, whole))  # replaced below
        wanted.append((c, sentences, own))
    if not wanted:
        return out
    texts = [sentences[i] for _, sentences, own in wanted for i in own]
    docs = np.asarray(embedder.embed_documents(texts), np.float64)
    query = np.asarray(embedder.embed_queries([q.text]), np.float64)[0]
    norms = np.linalg.norm(docs, axis=1) * (np.linalg.norm(query) or 1.0)
    sims = (docs @ query) / np.where(norms > 0, norms, 1.0)
    at = 0
    chosen: dict[str, QuoteChoice] = {}
    for c, sentences, own in wanted:
        part = sims[at:at + len(own)]
        at += len(own)
        best = int(np.argmax(part))  # argmax keeps the first of equals: position breaks ties
        i = own[best]
        chosen[c.id] = QuoteChoice(q.id, c.id, sentences[i], i + 1, len(sentences),
                                   float(part[best]))
    return [chosen.get(x.chunk_id, x) for x in out]


@dataclass(frozen=True)
class Migration:
    golden: GoldenSet
    labels: list[LabelCheck]
    quotes: list[QuoteChoice] = field(default_factory=list)

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
                   version: str | None = None, quote: QuoteMode = "chunk",
                   embedder: Embedder | None = None) -> Migration:
    """Rewrite every chunk id of ``golden`` (a chunk of ``old``) as an anchor quoting that
    chunk's content, or (``into="ids"``) as the ids of the ``new`` chunks that hold it.

    ``quote="sentence"`` quotes, of each chunk, the sentence most similar to the query instead
    (by ``embedder``, default: the default embedder), so that a re-chunking that cuts the old
    chunk in pieces expects only the piece holding the fact; the choices are in ``quotes``.

    With ``new``, each label is resolved there and reported: ``ok``, ``split`` (all the new
    chunks are expected), ``ambiguous`` (several new chunks hold it whole: it stays an anchor,
    which counts whichever ranks best) or ``lost`` (not found: kept as an anchor quoting the old
    text, to be fixed by hand). Existing anchors are carried over the same way. The version is
    bumped (or set), so the set's hash and version both say it changed."""
    if into == "ids" and new is None:
        raise InputError(field="--to", expected="the new corpus or store to take the new ids from",
                         found="<nothing>")
    old_by_id = {c.id: c for c in old}
    old_by_doc: dict[str, list[Chunk]] = {}
    for c in old:
        old_by_doc.setdefault(c.doc_id or "", []).append(c)
    if quote == "sentence" and embedder is None:
        from recallwatch.embedders import get_embedder

        embedder = get_embedder()
    choices: list[QuoteChoice] = []
    new_by_doc: dict[str, list[Chunk]] = {}
    for c in new or ():
        new_by_doc.setdefault(c.doc_id or "", []).append(c)
    lines = _lines(golden)
    labels: list[LabelCheck] = []
    queries: list[GoldenQuery] = []
    for q in golden.queries:
        line = lines.get(q.id)
        anchors: list[Anchor] = []
        olds: list[Chunk] = []
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
            olds.append(chunk)
        if quote == "sentence" and embedder is not None and olds:
            picked = _choose_quotes(q, olds, old_by_doc, embedder)
            choices.extend(picked)
            texts = [x.quote for x in picked]
        else:
            texts = [c.content or c.text for c in olds]
        for chunk, text in zip(olds, texts, strict=True):
            anchors.append(Anchor(chunk.doc_id or "", text, chunk.id in q.gold))
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
        groups = tuple(_migrate_group(g, q, old_by_id, new_by_doc if new is not None else None,
                                      into, golden.source, line, labels) for g in q.alternatives)
        queries.append(replace(q, expected=tuple(ids), gold=tuple(dict.fromkeys(gold)),
                               anchors=tuple(kept), alternatives=groups))
    migrated = replace(golden, queries=tuple(queries),
                       version=version or _next_version(golden.version))
    return Migration(migrated, labels, choices)


def golden_qrels(golden: GoldenSet, chunks: Sequence[Chunk] | None = None
                 ) -> list[tuple[str, str, int]]:
    """The golden set as relevance judgments ``(query id, chunk id, grade)``, for ``eval`` and
    ``compare``: every chunk a query names answers it (grade 1; a Gold chunk, a curated
    synthesis, grade 2), required or an alternative. Content anchors are resolved against
    ``chunks`` (every chunk a whole quote may be in, or all of a split one's)."""
    from recallwatch.acceptance.anchors import resolve_queries

    anchored = [q for q in golden.queries
                if q.anchors or any(g.anchors for g in q.alternatives)]
    if anchored and chunks is None:
        raise InputError(source=golden.source, record=anchored[0].id, field="expected",
                         expected="chunk ids (or a corpus to resolve content anchors against)",
                         found=f"content anchors in {len(anchored)} queries",
                         hint="give the corpus or store the anchors quote (--corpus/--store)")
    resolved = resolve_queries(anchored, lambda docs: [c for c in chunks or ()
                                                        if c.doc_id in docs])
    out: list[tuple[str, str, int]] = []
    for q in resolved.candidates(golden.queries):
        gold = set(q.gold)
        out += [(q.id, cid, 2 if cid in gold else 1) for cid in q.expected]
    return out


def _migrate_group(group: Alternatives, q: GoldenQuery, old_by_id: Mapping[str, Chunk],
                   new_by_doc: Mapping[str, list[Chunk]] | None, into: str,
                   source: str | None, line: int | None,
                   labels: list[LabelCheck]) -> Alternatives:
    """A group of alternatives migrated member by member as the required labels are: a chunk id
    becomes an anchor quoting the old chunk (or, ``into="ids"``, the one new chunk holding it)."""
    members: list[str | Anchor] = []
    for m in group.members:
        if isinstance(m, str):
            chunk = old_by_id.get(m)
            if chunk is None or not chunk.doc_id:
                raise DatasetError(
                    f"chunk {m!r} (an alternative) is not in the old corpus or has no doc_id",
                    source=source, line=line, record=q.id, field="expected",
                    hint="--from must be the corpus or store the golden set was written for")
            m = Anchor(chunk.doc_id, chunk.content or chunk.text, False)
        if new_by_doc is None:
            members.append(m)
            labels.append(LabelCheck(q.id, _label(m), "ok",
                                     "an alternative, rewritten as an anchor", line))
            continue
        r = locate(m, new_by_doc.get(m.doc_id, []))
        status: Status = {"whole": "ambiguous" if r.ambiguous else "ok", "split": "split",
                          "unresolved": "lost"}[r.kind]
        labels.append(LabelCheck(q.id, _label(m), status, "an alternative: " + r.describe(),
                                 line, r))
        whole = r.kind == "whole" and not r.ambiguous
        members.append(r.chunk_ids[0] if into == "ids" and whole else m)
    return replace(group, members=tuple(dict.fromkeys(members)))


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
