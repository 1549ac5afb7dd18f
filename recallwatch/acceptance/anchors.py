"""Content anchors: an expected passage ``{doc_id, quote}`` found in the chunks a store holds now.

A golden set of chunk ids breaks when a document is re-chunked (every chunk is renamed); a quote
of the document does not. At run time each anchor resolves to the current chunks that hold it:

* **whole** — one chunk holds the quote (several may, e.g. with overlapping chunks: each is an
  alternative, and the one ranked best counts);
* **split** — no chunk holds it, but consecutive chunks of its document do together (the quote
  runs off the end of one into the next): every one of them must be found, like a multi-chunk
  expectation, and the chunking diagnosis names the split.

Quotes are compared exactly first, then case-folded with whitespace collapsed
(:func:`recallwatch.formats.golden.normalise_quote`). The same matching on the top-K chunks'
text measures **fact recall**: the share of a query's anchors whose quotes reached the context a
RAG system would read, with no model involved.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from recallwatch.errors import DatasetError
from recallwatch.formats.golden import Anchor, GoldenQuery, normalise_quote
from recallwatch.records import Chunk

__all__ = [
    "AnchorResolution",
    "QueryAnchors",
    "closest_chunks",
    "fact_found",
    "locate",
    "resolve_queries",
]

Kind = Literal["whole", "split", "unresolved"]
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class AnchorResolution:
    anchor: Anchor
    kind: Kind
    chunk_ids: tuple[str, ...]  # whole: alternatives (any one counts); split: all, in quote order
    match: Literal["exact", "normalised"] | None = None
    closest: tuple[tuple[str, float], ...] = ()  # unresolved: nearest chunks by content

    @property
    def ambiguous(self) -> bool:
        return self.kind == "whole" and len(self.chunk_ids) > 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"doc_id": self.anchor.doc_id, "quote": self.anchor.quote,
                               "kind": self.kind, "match": self.match,
                               "chunks": list(self.chunk_ids)}
        if self.closest:
            out["closest"] = [{"id": c, "overlap": round(s, 3)} for c, s in self.closest]
        return out

    def describe(self) -> str:
        """One line for a reader: what the anchor resolved to."""
        if self.kind == "split":
            return f"split across {len(self.chunk_ids)} chunks: {' + '.join(self.chunk_ids)}"
        if self.kind == "whole":
            how = "" if self.match == "exact" else " (after case/whitespace normalisation)"
            if len(self.chunk_ids) == 1:
                return f"in {self.chunk_ids[0]}{how}"
            return f"in any of {', '.join(self.chunk_ids)}{how}"
        near = ", ".join(f"{c} ({s:.0%} of its words)" for c, s in self.closest) or "none"
        return f"not found in document {self.anchor.doc_id}; closest chunks: {near}"


def _passages(chunk: Chunk) -> list[str]:
    """Where a quote is looked for: the raw content, then the representation field."""
    return list(dict.fromkeys(p for p in (chunk.content, chunk.text) if p))


def locate(anchor: Anchor, chunks: Sequence[Chunk], *, split: bool = True) -> AnchorResolution:
    """Resolve ``anchor`` among ``chunks`` (the chunks of its document, in the store's order)."""
    exact = [c.id for c in chunks if any(anchor.quote in p for p in _passages(c))]
    if exact:
        return AnchorResolution(anchor, "whole", tuple(exact), "exact")
    quote = normalise_quote(anchor.quote)
    normed = [(c, [normalise_quote(p) for p in _passages(c)]) for c in chunks]
    whole = [c.id for c, ps in normed if any(quote in p for p in ps)]
    if whole:
        return AnchorResolution(anchor, "whole", tuple(whole), "normalised")
    if split:
        cover = _split_cover(quote, [(c.id, ps[0]) for c, ps in normed if ps])
        if cover:
            return AnchorResolution(anchor, "split", tuple(cover), "normalised")
    return AnchorResolution(anchor, "unresolved", (), None, tuple(closest_chunks(quote, chunks)))


def _split_cover(quote: str, texts: Sequence[tuple[str, str]]) -> list[str] | None:
    """The fewest consecutive chunks that hold ``quote`` together, or None.

    A chunk takes part as the quote's head (its text ends with the quote's beginning), its tail
    (its text starts with the quote's end) or a middle piece (its whole text lies inside the
    quote). Pieces must meet or overlap; only whitespace may fall between two of them, since a
    chunker drops the space at a cut."""
    n = len(quote)
    spans: list[tuple[int, int, str]] = []
    for cid, text in texts:
        head = next((e for e in range(min(len(text), n - 1), 0, -1)
                     if text.endswith(quote[:e])), 0)
        if head:
            spans.append((0, head, cid))
        tail = next((s for s in range(max(1, n - len(text)), n) if text.startswith(quote[s:])), 0)
        if tail:
            spans.append((tail, n, cid))
        at = quote.find(text, 1) if text else -1
        while at > 0 and at + len(text) < n:  # every place: a document may repeat a sentence
            spans.append((at, at + len(text), cid))
            at = quote.find(text, at + 1)
    cover: list[str] = []
    pos = 0
    while pos < n:
        reach = [(end, cid) for start, end, cid in spans if end > pos and cid not in cover
                 and (start <= pos or not quote[pos:start].strip())]
        if not reach:
            return None
        end, cid = max(reach, key=lambda t: t[0])  # the first of equals: document order
        cover.append(cid)
        pos = end
    return cover if len(cover) > 1 else None


def closest_chunks(quote: str, chunks: Sequence[Chunk], n: int = 3) -> list[tuple[str, float]]:
    """The chunks holding the largest share of the quote's words (a hint when it is not found:
    an edited sentence, a typo in the quote, the wrong document)."""
    words = Counter(_WORD.findall(normalise_quote(quote)))
    total = sum(words.values())
    if not total:
        return []
    scored = []
    for c in chunks:
        have = Counter(_WORD.findall(" ".join(normalise_quote(p) for p in _passages(c))))
        share = sum(min(k, have[w]) for w, k in words.items()) / total
        if share > 0:
            scored.append((c.id, share))
    return sorted(scored, key=lambda t: (-t[1], t[0]))[:n]


def fact_found(anchor: Anchor, context: Sequence[Chunk]) -> bool:
    """Whether the quote is in the context: whole in any of its chunks, or split across its
    chunks of the anchor's document."""
    if locate(anchor, context, split=False).kind == "whole":
        return True
    same_doc = [c for c in context if c.doc_id == anchor.doc_id]
    return len(same_doc) > 1 and locate(anchor, same_doc).kind == "split"


@dataclass
class QueryAnchors:
    """The anchors of a golden set resolved against one source, and how they shape the gate."""

    by_query: dict[str, tuple[AnchorResolution, ...]] = field(default_factory=dict)

    @property
    def splits(self) -> dict[str, str]:
        """Chunk id → what the chunking diagnosis says about the split it takes part in."""
        out: dict[str, str] = {}
        for resolutions in self.by_query.values():
            for r in resolutions:
                if r.kind == "split":
                    line = (f"the expected passage {_short(r.anchor.quote)} of document "
                            f"{r.anchor.doc_id} is split across {' + '.join(r.chunk_ids)}")
                    for cid in r.chunk_ids:
                        out.setdefault(cid, line)
        return out

    @property
    def holders(self) -> dict[str, tuple[str, str]]:
        """Chunk id → (the expected passage found in it, wherever the chunking put it, in words;
        its quote): what the diagnosis says about a chunk the gate expects for its content."""
        out: dict[str, tuple[str, str]] = {}
        for resolutions in self.by_query.values():
            for r in resolutions:
                for cid in r.chunk_ids:
                    out.setdefault(cid, (f"the expected passage {_short(r.anchor.quote)} of "
                                         f"document {r.anchor.doc_id}", r.anchor.quote))
        return out

    def candidates(self, queries: Sequence[GoldenQuery]) -> list[GoldenQuery]:
        """Each query with every chunk its anchors may resolve to added to ``expected`` (what
        the source must score), before the best alternative is chosen."""
        return [self._with(q, {r.anchor.key: r.chunk_ids for r in self.by_query.get(q.id, ())})
                for q in queries]

    def settle(self, queries: Sequence[GoldenQuery],
               ranked: Sequence[Sequence[str]]) -> list[GoldenQuery]:
        """Each query's final ``expected`` (``queries`` as the golden set holds them): a split
        anchor needs all its chunks; of a whole
        anchor's alternatives, the best-ranked one (the first in document order if none is)."""
        out = []
        for q, ids in zip(queries, ranked):
            position = {cid: i for i, cid in enumerate(ids)}
            chosen: dict[str, tuple[str, ...]] = {}
            for r in self.by_query.get(q.id, ()):
                if r.kind == "whole":
                    best = min(r.chunk_ids, key=lambda c: position.get(c, len(ids)))
                    chosen[r.anchor.key] = (best,)
                else:
                    chosen[r.anchor.key] = r.chunk_ids
            out.append(self._with(q, chosen))
        return out

    @staticmethod
    def _with(q: GoldenQuery, resolved: Mapping[str, tuple[str, ...]]) -> GoldenQuery:
        from_anchors = [c for a in q.anchors for c in resolved.get(a.key, ())]
        gold = [c for a in q.anchors if a.gold for c in resolved.get(a.key, ())]
        expected = tuple(dict.fromkeys([*q.expected, *from_anchors]))
        return replace(q, expected=expected, gold=tuple(dict.fromkeys([*q.gold, *gold])))

    def report(self, q: GoldenQuery, chosen: Sequence[str],
               context: Sequence[Chunk]) -> tuple[tuple[dict[str, Any], ...], float | None]:
        """Per anchor: its resolution, the chunk(s) the gate expected and whether its quote is in
        the top-K context; and the query's fact recall@K (None without anchors)."""
        rows = []
        for r in self.by_query.get(q.id, ()):
            row = r.to_dict()
            row["expected"] = [c for c in r.chunk_ids if c in chosen]
            row["in_context"] = fact_found(r.anchor, context)
            rows.append(row)
        if not rows:
            return (), None
        return tuple(rows), sum(r["in_context"] for r in rows) / len(rows)


def _short(quote: str, width: int = 60) -> str:
    text = " ".join(quote.split())
    return repr(text if len(text) <= width else text[:width - 1] + "…")


def resolve_queries(queries: Sequence[GoldenQuery],
                    chunks_of: Callable[[Sequence[str]], Sequence[Chunk]]) -> QueryAnchors:
    """Resolve every anchor of ``queries`` among the chunks of its document
    (``chunks_of(doc_ids)``); an anchor found nowhere is a dataset error, as a missing chunk id
    is, naming the closest chunks."""
    doc_ids = sorted({a.doc_id for q in queries for a in q.anchors})
    by_doc: dict[str, list[Chunk]] = {d: [] for d in doc_ids}
    for c in chunks_of(doc_ids) if doc_ids else ():
        if c.doc_id in by_doc:
            by_doc[c.doc_id].append(c)
    out = QueryAnchors()
    lost: list[str] = []
    for q in queries:
        if not q.anchors:
            continue
        resolved = tuple(locate(a, by_doc[a.doc_id]) for a in q.anchors)
        out.by_query[q.id] = resolved
        lost += [f"query {q.id}: {_short(r.anchor.quote, 40)} "
                 + (r.describe() if by_doc[r.anchor.doc_id]
                    else f"names document {r.anchor.doc_id}, which has no chunks here")
                 for r in resolved if r.kind == "unresolved"]
    if lost:
        more = f" and {len(lost) - 5} more" if len(lost) > 5 else ""
        raise DatasetError(
            f"{len(lost)} anchor(s) do not resolve to any current chunk: "
            + "; ".join(lost[:5]) + more,
            hint="run `recallwatch golden check` for the whole list; fix the quote or the doc_id "
            "(a results file resolves anchors only with --corpus FILE)",
        )
    return out
