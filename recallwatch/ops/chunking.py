"""Re-chunking a corpus: by sentences, by size with overlap, or by paragraph.

A corpus file holds chunks, not documents, so a document is rebuilt first: the chunks of one
``doc_id``, in file order, joined by a blank line. A table chunk (``kind: table``) is never cut
or merged with prose (a table without its header is the first cause of a failing query): it
stays one chunk, with its description. The prose between tables is cut into units (sentences,
paragraphs, or words for ``size``), and consecutive units are packed into chunks of at most
``size`` characters (a unit longer than that is a chunk alone). With ``overlap``, a chunk starts
with the last units of the one before it, as many as fit in ``overlap`` characters.

Every new chunk is a substring of its document, so a content anchor (``{doc_id, quote}``) that
quoted the document resolves on every chunking; only the white space between units is left out.
A new chunk keeps ``doc_id`` and the metadata of the chunk its text starts in, and is named
``DOC/<method letter><n>`` (``DOC/s1``, ``DOC/z2``, ``DOC/p3``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from recallwatch.errors import InputError
from recallwatch.formats.sentences import split_sentences
from recallwatch.formats.structured import LINE_KEY
from recallwatch.records import Chunk, content_hash

__all__ = ["METHODS", "Chunking", "chunk_spans", "rechunk"]

Method = Literal["sentences", "size", "paragraph"]
METHODS: tuple[Method, ...] = get_args(Method)
_LETTER = {"sentences": "s", "size": "z", "paragraph": "p"}
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*\Z)", re.DOTALL)
_WORD = re.compile(r"\S+")
_JOIN = "\n\n"


@dataclass(frozen=True)
class Chunking:
    """How to cut: the unit (``method``), the largest chunk and the overlap, in characters."""

    method: Method
    size: int = 500
    overlap: int = 0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InputError(field="chunking.method", expected=" or ".join(METHODS),
                             found=self.method)
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise InputError(field="chunking.size", expected="a whole number of characters "
                             ">= 1", found=self.size)
        if (isinstance(self.overlap, bool) or not isinstance(self.overlap, int)
                or not 0 <= self.overlap < self.size):
            raise InputError(field="chunking.overlap", expected=f"a whole number of characters "
                             f"from 0 to size - 1 ({self.size - 1})", found=self.overlap)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str, record: str,
                     line: int | None = None) -> Chunking:
        """A chunking from a plan's ``chunking:`` mapping; an unknown key is a located error."""
        unknown = sorted(set(data) - {"method", "size", "overlap", LINE_KEY})
        if unknown:
            raise InputError(source=source, line=line, record=record,
                             field=f"chunking.{unknown[0]}",
                             expected="one of method, size, overlap", found=unknown[0])
        if "method" not in data:
            raise InputError(source=source, line=line, record=record, field="chunking.method",
                             expected=" or ".join(METHODS), found="<nothing>")
        try:
            return cls(data["method"], data.get("size", 500), data.get("overlap", 0))
        except InputError as exc:
            raise InputError(source=source, line=line, record=record, field=exc.field,
                             expected=exc.expected, found=exc.found) from None

    def describe(self) -> dict[str, Any]:
        return {"method": self.method, "size": self.size, "overlap": self.overlap}


def _units(text: str, method: Method) -> list[tuple[int, int]]:
    """The (start, end) spans of the units of ``text``, in order; only white space between."""
    paragraphs = [(m.start(), m.end()) for m in _PARAGRAPH.finditer(text)]
    if method == "paragraph":
        return paragraphs
    if method == "size":
        return [(m.start(), m.end()) for m in _WORD.finditer(text)]
    spans = []
    for start, end in paragraphs:
        at = start
        for sentence in split_sentences(text[start:end]):
            begin = text.index(sentence, at, end)
            spans.append((begin, begin + len(sentence)))
            at = begin + len(sentence)
    return spans


def chunk_spans(text: str, chunking: Chunking) -> list[tuple[int, int]]:
    """The (start, end) spans of the chunks of ``text``: units packed up to ``size``
    characters, each chunk after the first starting with the previous one's last units that fit
    in ``overlap`` characters."""
    units = _units(text, chunking.method)
    out: list[tuple[int, int]] = []
    i, last = 0, -1
    while i < len(units):
        j = max(i, last + 1)  # a chunk always ends past the one before it
        while j + 1 < len(units) and units[j + 1][1] - units[i][0] <= chunking.size:
            j += 1
        out.append((units[i][0], units[j][1]))
        last = j
        if j + 1 == len(units):
            break
        k = j + 1
        while k - 1 > i and units[j][1] - units[k - 1][0] <= chunking.overlap:
            k -= 1
        i = k
    return out


def _documents(chunks: Sequence[Chunk]) -> Iterator[tuple[str, list[Chunk]]]:
    docs: dict[str, list[Chunk]] = {}
    for c in chunks:
        docs.setdefault(c.doc_id or c.id, []).append(c)
    yield from docs.items()


def _segments(doc: list[Chunk]) -> Iterator[tuple[bool, list[Chunk]]]:
    """Runs of consecutive chunks of one document: (is a table, chunks)."""
    run: list[Chunk] = []
    for c in doc:
        if c.kind == "table":
            if run:
                yield False, run
                run = []
            yield True, [c]
        else:
            run.append(c)
    if run:
        yield False, run


def rechunk(chunks: Sequence[Chunk], chunking: Chunking) -> list[Chunk]:
    """The corpus cut again: every document's prose re-chunked, tables kept whole."""
    out: list[Chunk] = []
    letter = _LETTER[chunking.method]
    for doc_id, doc in _documents(chunks):
        n = 0
        for is_table, segment in _segments(doc):
            if is_table:
                n += 1
                out.append(_renamed(segment[0], f"{doc_id}/{letter}{n}", segment[0].text))
                continue
            text = _JOIN.join(c.text for c in segment)
            starts = []  # where each source chunk's text starts in the joined text
            at = 0
            for c in segment:
                starts.append(at)
                at += len(c.text) + len(_JOIN)
            for start, end in chunk_spans(text, chunking):
                n += 1
                source = segment[max(i for i, s in enumerate(starts) if s <= start)]
                out.append(_renamed(source, f"{doc_id}/{letter}{n}", text[start:end],
                                    doc_id=doc_id))
    return out


def _renamed(source: Chunk, new_id: str, text: str, *, doc_id: str | None = None) -> Chunk:
    prose = source.kind != "table"
    chunk = replace(source, id=new_id, text=text, content=text if prose else source.content,
                    doc_id=doc_id or source.doc_id or source.id,
                    description=None if prose else source.description, content_hash="")
    return replace(chunk, content_hash=content_hash(chunk))
