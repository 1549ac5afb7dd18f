"""The records every layer exchanges: a knowledge-base chunk, its corpus record and its content
hash; and the tokens a language model reported using.

It sits below both the corpus format (which reads chunks from files) and the stores (which hold
them), so neither depends on the other; and below every caller of a model (the LLM judge, the
answers' generator and judge) and every reader of their costs (the gate, the benchmarks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from recallwatch._hashing import canonical_hash

__all__ = [
    "FILTER_FIELDS",
    "OPTIONAL_TEXT_FIELDS",
    "Chunk",
    "TokenUsage",
    "chunk_to_record",
    "content_hash",
    "group_problem",
    "may_see",
]

# The chunk fields a search can filter on by equality (a policy's search.filter, every store).
FILTER_FIELDS: tuple[str, ...] = ("doc_id", "domain", "label", "kind")

# The optional text fields of a chunk, in the order a corpus record lists them.
OPTIONAL_TEXT_FIELDS: tuple[str, ...] = ("content", "doc_id", "domain", "label", "description")


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of a knowledge base (the corpus format's record)."""

    id: str
    text: str  # the representation field: what is embedded and searched
    content: str | None = None  # the raw content shown to a reader
    doc_id: str | None = None
    domain: str | None = None
    label: str | None = None  # e.g. SINTESIS_CURADA marks a Gold chunk
    facets: Mapping[str, str] = field(default_factory=dict)
    valid_from: date | None = None
    valid_to: date | None = None
    kind: str = "text"  # text, table, …
    description: str | None = None
    content_hash: str = ""
    # The groups allowed to see the chunk (any one of them suffices); None: everyone may.
    acl: tuple[str, ...] | None = None


# Characters a group name may not hold: stores keep an ACL as the text "|g1|g2|" and their own
# filter looks for "|g|" in it, so a separator or a quote inside a name would confuse them.
_GROUP_FORBIDDEN = frozenset('|"\\')


def group_problem(name: object) -> str | None:
    """Why ``name`` cannot be a group name (of a chunk's acl or a query's groups), or None."""
    if not isinstance(name, str) or not name.strip():
        return "a non-empty string"
    if any(c in _GROUP_FORBIDDEN or ord(c) < 32 for c in name):
        return "a name without |, double quotes, backslashes or control characters"
    return None


def may_see(groups: tuple[str, ...] | None, acl: tuple[str, ...] | None) -> bool:
    """Whether a user in ``groups`` may see a chunk with ``acl``: a chunk without an acl is
    everyone's; otherwise the user needs one of its groups. ``groups`` None: no check."""
    return groups is None or acl is None or bool(set(groups) & set(acl))


def chunk_to_record(chunk: Chunk) -> dict[str, Any]:
    """The corpus record of a chunk (optional fields left out when empty); inverse of the reader."""
    out: dict[str, Any] = {"id": chunk.id, "text": chunk.text}
    for name in OPTIONAL_TEXT_FIELDS:
        value = getattr(chunk, name)
        if value is not None:
            out[name] = value
    if chunk.facets:
        out["facets"] = dict(chunk.facets)
    if chunk.valid_from is not None:
        out["valid_from"] = chunk.valid_from.isoformat()
    if chunk.valid_to is not None:
        out["valid_to"] = chunk.valid_to.isoformat()
    if chunk.kind != "text":
        out["kind"] = chunk.kind
    if chunk.acl is not None:
        out["acl"] = list(chunk.acl)
    return out


def content_hash(chunk: Chunk) -> str:
    """sha256 over every field of the chunk except the hash itself (canonical JSON)."""
    return canonical_hash(chunk_to_record(chunk))


@dataclass(frozen=True)
class TokenUsage:
    """The tokens an OpenAI-compatible endpoint reported in the ``usage`` field of its replies:
    ``prompt_tokens`` (input) and ``completion_tokens`` (output), summed over ``reported`` of
    ``requests`` replies (a reply without a usable ``usage`` field is counted as a request whose
    tokens were not reported, never guessed)."""

    requests: int = 0
    reported: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of_reply(cls, reply: object) -> TokenUsage:
        """One reply's tokens, from its ``usage`` object (``prompt_tokens``,
        ``completion_tokens``: whole numbers of at least 0); not reported otherwise."""
        usage = reply.get("usage") if isinstance(reply, Mapping) else None
        if not isinstance(usage, Mapping):
            return cls(1, 0)
        given = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
        if not all(type(v) is int and v >= 0 for v in given):
            return cls(1, 0)
        return cls(1, 1, int(given[0] or 0), int(given[1] or 0))

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.requests + other.requests, self.reported + other.reported,
                          self.input_tokens + other.input_tokens,
                          self.output_tokens + other.output_tokens)

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.requests - other.requests, self.reported - other.reported,
                          self.input_tokens - other.input_tokens,
                          self.output_tokens - other.output_tokens)

    def note(self) -> str | None:
        """Why the counts are partial or absent, in words (None: every reply reported)."""
        if self.reported == self.requests:
            return None
        if not self.reported:
            return (f"not reported: none of the {self.requests} replies had a usage field"
                    if self.requests else "not reported: no request was made")
        return (f"{self.requests - self.reported} of {self.requests} replies did not report "
                "their tokens (no usage field): the counts cover the others")

    def line(self) -> str:
        """``1,234 input and 56 output tokens over 12 requests`` (or why not reported)."""
        if not self.reported:
            return self.note() or "not reported"
        text = (f"{self.input_tokens:,} input and {self.output_tokens:,} output tokens over "
                f"{self.reported} request{'s' if self.reported != 1 else ''}")
        note = self.note()
        return f"{text} ({note})" if note else text

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "reported": self.reported,
                "input_tokens": self.input_tokens if self.reported else None,
                "output_tokens": self.output_tokens if self.reported else None,
                "note": self.note()}
