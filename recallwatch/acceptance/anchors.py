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

Groups of alternatives (``{any: [...]}``, ``{at_least: N, of: [...]}``: chunk ids or anchors)
are settled the same way: the source scores every member, then the ``N`` best-ranked members
count as the group's expected items (:meth:`QueryAnchors.settle`), and the report says which.

**Twins.** A chunk whose text is identical to an expected chunk's (the same content under
another id: :mod:`recallwatch.formats.duplicates`) answers the query as well. With the policy's
``twins_count_as_found`` (the default), an expected chunk missing from the top K whose twin is in
the top K is an alternative of it: :func:`find_twins` finds them, :meth:`QueryAnchors.settle`
counts the twin in its place (at the twin's rank), and :meth:`QueryAnchors.twin_rows` says so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from recallwatch.errors import DatasetError
from recallwatch.formats.duplicates import duplicate_text
from recallwatch.formats.golden import Alternatives, Anchor, GoldenQuery, normalise_quote
from recallwatch.records import Chunk

__all__ = [
    "AnchorResolution",
    "QueryAnchors",
    "closest_chunks",
    "fact_found",
    "find_twins",
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
    # the anchors inside groups of alternatives, by query then anchor key
    members: dict[str, dict[str, AnchorResolution]] = field(default_factory=dict)
    # query id -> for each of its groups, the members counted (chunk ids or anchor keys) and
    # the chunks that count for them
    chosen: dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = field(
        default_factory=dict)
    # query id -> expected chunk (missing from the top K) -> its identical twins in the top K,
    # best-ranked first (:func:`find_twins`); given before :meth:`settle`
    twins: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    # query id -> expected chunk -> the twin :meth:`settle` counted in its place
    swapped: dict[str, dict[str, str]] = field(default_factory=dict)

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
        """Each query with every chunk its anchors and groups may resolve to added to
        ``expected`` (what the source must score), before the best alternative is chosen."""
        out = []
        for q in queries:
            q_all = self._with(q, {r.anchor.key: r.chunk_ids
                                   for r in self.by_query.get(q.id, ())})
            members = [c for g in q.alternatives for m in g.members
                       for c in self._chunks_of(q.id, m)]
            out.append(replace(q_all, expected=tuple(dict.fromkeys([*q_all.expected,
                                                                      *members]))))
        return out

    def _chunks_of(self, qid: str, member: str | Anchor) -> tuple[str, ...]:
        """The chunks a group member stands for: itself, or what its anchor resolved to."""
        if isinstance(member, str):
            return (member,)
        resolved = self.members.get(qid, {}).get(member.key)
        return resolved.chunk_ids if resolved is not None else ()

    def _settle_group(self, qid: str, group: Alternatives,
                      position: Mapping[str, int], depth: int) -> tuple[list[str], list[str]]:
        """The group's ``need`` best-ranked members (the first listed among equals): their
        names (chunk id or anchor key) and the chunks that count for them."""
        ranked = []
        for order, m in enumerate(group.members):
            chunks = self._chunks_of(qid, m)
            resolution = None if isinstance(m, str) else self.members[qid][m.key]
            if resolution is not None and resolution.kind == "whole":
                chunks = (min(chunks, key=lambda c: position.get(c, depth)),)
            rank = max((position.get(c, depth) for c in chunks), default=depth)
            ranked.append((rank, order, m if isinstance(m, str) else m.key, chunks))
        best = sorted(ranked)[:group.need]
        return [name for _, _, name, _ in best], [c for *_, chunks in best for c in chunks]

    def settle(self, queries: Sequence[GoldenQuery],
               ranked: Sequence[Sequence[str]]) -> list[GoldenQuery]:
        """Each query's final ``expected`` (``queries`` as the golden set holds them): a split
        anchor needs all its chunks; of a whole
        anchor's alternatives, the best-ranked one (the first in document order if none is)."""
        out = []
        for q, ids in zip(queries, ranked):
            position = {cid: i for i, cid in enumerate(ids)}
            twins = self.twins.get(q.id, {})
            for cid, found in twins.items():  # a twin is an alternative of its expected chunk
                position[cid] = min(position.get(cid, len(ids)), position[found[0]])
            chosen: dict[str, tuple[str, ...]] = {}
            for r in self.by_query.get(q.id, ()):
                if r.kind == "whole":
                    best = min(r.chunk_ids, key=lambda c: position.get(c, len(ids)))
                    chosen[r.anchor.key] = (best,)
                else:
                    chosen[r.anchor.key] = r.chunk_ids
            settled = self._with(q, chosen)
            names: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
            counted: list[str] = []
            for g in q.alternatives:
                group_names, group_chunks = self._settle_group(q.id, g, position, len(ids))
                names.append((tuple(group_names), tuple(group_chunks)))
                counted += group_chunks
            if q.alternatives:
                self.chosen[q.id] = tuple(names)
                settled = replace(settled, expected=tuple(dict.fromkeys([*settled.expected,
                                                                         *counted])))
            out.append(self._swap_twins(settled, twins))
        return out

    def _swap_twins(self, q: GoldenQuery, twins: Mapping[str, tuple[str, ...]]) -> GoldenQuery:
        """``q`` with each expected chunk that has a twin in the top K replaced by its
        best-ranked twin (a Gold chunk's twin is Gold)."""
        swap = {c: twins[c][0] for c in q.expected if c in twins}
        if not swap:
            return q
        self.swapped[q.id] = swap
        return replace(q, expected=tuple(dict.fromkeys(swap.get(c, c) for c in q.expected)),
                       gold=tuple(dict.fromkeys([*q.gold, *(swap[c] for c in q.gold
                                                            if c in swap)])))

    def twin_rows(self, qid: str, ranks: Mapping[str, int | None]) -> tuple[dict[str, Any], ...]:
        """Per expected chunk counted through its twin: ``{"expected", "found", "rank"}``."""
        return tuple({"expected": c, "found": t, "rank": ranks.get(t)}
                     for c, t in self.swapped.get(qid, {}).items())

    def group_rows(self, q: GoldenQuery, top: Sequence[str],
                   context: Sequence[Chunk]) -> tuple[dict[str, Any], ...]:
        """Per group of alternatives: its members, how many it needs, the members counted, and
        the members found in the top K (an anchor: its quote in the top-K text)."""
        in_top = set(top)
        in_top |= {c for c, t in self.swapped.get(q.id, {}).items() if t in in_top}
        rows = []
        for g, (names, chunks) in zip(q.alternatives, self.chosen.get(q.id, ())):
            found = [m if isinstance(m, str) else m.key for m in g.members
                     if (m in in_top if isinstance(m, str) else fact_found(m, context))]
            rows.append({"members": [m if isinstance(m, str) else m.to_dict()
                                     for m in g.members],
                         "need": g.need, "counted": list(names), "chunks": list(chunks),
                         "found": found,
                         "satisfied": len(found) >= g.need})
        return tuple(rows)

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
        swapped = self.swapped.get(q.id, {})
        counted = set(chosen)
        for r in self.by_query.get(q.id, ()):
            row = r.to_dict()
            row["expected"] = [swapped.get(c, c) for c in r.chunk_ids
                               if c in counted or swapped.get(c) in counted]
            row["in_context"] = fact_found(r.anchor, context)
            rows.append(row)
        # a group holding anchors is one fact: found when enough of its members' quotes are
        facts = [row["in_context"] for row in rows]
        facts += [sum(fact_found(a, context) for a in g.anchors) + sum(
            c in {x.id for x in context} for c in g.ids) >= g.need
                  for g in q.alternatives if g.anchors]
        if not facts:
            return tuple(rows), None
        return tuple(rows), sum(facts) / len(facts)


def _short(quote: str, width: int = 60) -> str:
    text = " ".join(quote.split())
    return repr(text if len(text) <= width else text[:width - 1] + "…")


def _all_anchors(q: GoldenQuery) -> tuple[Anchor, ...]:
    return (*q.anchors, *(a for g in q.alternatives for a in g.anchors))


def find_twins(queries: Sequence[GoldenQuery], ranked: Sequence[Sequence[str]],
               ks: Sequence[int], chunks_of: Callable[[Sequence[str]], Mapping[str, Chunk]],
               ) -> dict[str, dict[str, tuple[str, ...]]]:
    """Query id → each expected chunk missing from its top K → the chunks of its top K with
    identical text (normalised as :func:`recallwatch.formats.duplicates.duplicate_text`),
    best-ranked first. A chunk the query itself expects is nobody's twin (it counts on its
    own). ``queries`` carry every chunk they may expect (:meth:`QueryAnchors.candidates`);
    ``chunks_of(ids)`` reads chunks (those it cannot read have no twins). Only queries missing
    an expected chunk are read: their top K and missing chunks, a block of queries at a time."""
    wanted = []
    for q, ids, k in zip(queries, ranked, ks):
        top = list(ids[:k])
        in_top = set(top)
        missing = [c for c in q.expected if c not in in_top]
        if missing:
            wanted.append((q, top, missing))
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for start in range(0, len(wanted), _TWIN_BLOCK):
        block = wanted[start:start + _TWIN_BLOCK]
        read = chunks_of(list(dict.fromkeys(c for _, top, missing in block
                                            for c in (*missing, *top))))
        text = {cid: duplicate_text(c) for cid, c in read.items()}
        for q, top, missing in block:
            own = set(q.expected)
            found = {c: tuple(t for t in top if t not in own and t in text
                              and text[t] == text[c])
                     for c in missing if c in text}
            found = {c: t for c, t in found.items() if t}
            if found:
                out[q.id] = found
    return out


# Queries whose chunks find_twins reads in one call: the reads stay bounded on a large set.
_TWIN_BLOCK = 512


def resolve_queries(queries: Sequence[GoldenQuery],
                    chunks_of: Callable[[Sequence[str]], Sequence[Chunk]]) -> QueryAnchors:
    """Resolve every anchor of ``queries`` among the chunks of its document
    (``chunks_of(doc_ids)``); an anchor found nowhere is a dataset error, as a missing chunk id
    is, naming the closest chunks."""
    doc_ids = sorted({a.doc_id for q in queries for a in _all_anchors(q)})
    by_doc: dict[str, list[Chunk]] = {d: [] for d in doc_ids}
    for c in chunks_of(doc_ids) if doc_ids else ():
        if c.doc_id in by_doc:
            by_doc[c.doc_id].append(c)
    out = QueryAnchors()
    lost: list[str] = []
    for q in queries:
        if not _all_anchors(q):
            continue
        resolved = tuple(locate(a, by_doc[a.doc_id]) for a in q.anchors)
        out.by_query[q.id] = resolved
        out.members[q.id] = {a.key: locate(a, by_doc[a.doc_id])
                             for g in q.alternatives for a in g.anchors}
        resolved += tuple(out.members[q.id].values())
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
