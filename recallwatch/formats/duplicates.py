"""Chunks of a corpus that say the same thing: exact duplicates (identical text) and near
duplicates (almost all their words in the same order).

A query that expects one of two identical chunks is answered by either; a gate that counted only
the one listed would call it missing while its twin sits at rank 1. ``init --corpus``,
``ingest`` and ``golden check`` report duplicates, and the gate counts an identical twin of an
expected chunk as found (policy ``twins_count_as_found``).

**The rules.** A chunk's text here is what a reader is shown: its ``content``, else its ``text``,
compared after :func:`recallwatch.formats.golden.normalise_quote` (Unicode NFC, case folded,
every run of whitespace one space).

* **Exact duplicates**: equal normalised texts.
* **Near duplicates**: two chunks that are not exact duplicates and share about 90 % or more of
  their three-word sequences (word shingles), i.e. a Jaccard similarity of at least 0.9,
  estimated from 64 MinHash values per chunk: near when at least 58 of the 64 agree (the
  estimate is within about ±0.04 of the true similarity). Candidate pairs come from
  locality-sensitive hashing (16 bands of 4 values, so a pair at 0.9 is a candidate with
  probability > 0.99999), which keeps the work close to linear in the number of chunks; at most
  ``MAX_CANDIDATE_PAIRS`` candidate pairs are compared, and a result says when that cap cut the
  search short. A text of fewer than three words is one shingle.

The finder keeps per chunk an 8-byte digest and the 64 MinHash values (256 bytes), never the
text, so an ingestion that streams its corpus can run it as it reads.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallwatch.formats.golden import normalise_quote
from recallwatch.records import Chunk

__all__ = ["MAX_CANDIDATE_PAIRS", "NEAR_AGREE", "NEAR_SIMILARITY", "DuplicateFinder",
           "Duplicates", "duplicate_text", "find_duplicates"]

SHINGLE_WORDS = 3
MINHASH_VALUES = 64
BAND_ROWS = 4  # 16 bands of 4 values
NEAR_SIMILARITY = 0.9
NEAR_AGREE = 58  # of the 64 MinHash values: an estimated Jaccard similarity of 0.906
MAX_CANDIDATE_PAIRS = 2_000_000
_EXAMPLES = 3

_PRIME = 0x100000001B3  # the FNV prime: the base of the words' byte polynomial
_BATCH = 512  # texts whose MinHash values are computed together
# Fixed hash functions: the same corpus gives the same near duplicates on every run and machine.
_STEPS = np.arange(MINHASH_VALUES, dtype=np.uint32)
_SHINGLE_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 1], dtype=np.uint64)
_EMPTY = np.full(MINHASH_VALUES, 0xFFFFFFFF, dtype=np.uint32)


def duplicate_text(chunk: Chunk) -> str:
    """What two chunks are compared on: the text a reader is shown, normalised."""
    return normalise_quote(chunk.content or chunk.text)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: spreads combined hashes over 64 bits."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


def _mix32(x: np.ndarray) -> np.ndarray:
    """A 32-bit finaliser (murmur3's): each of the 64 values a different function of the
    shingle, not a shifted copy."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x85EBCA6B)
    x = x ^ (x >> np.uint32(13))
    x = x * np.uint32(0xC2B2AE35)
    out: np.ndarray = x ^ (x >> np.uint32(16))
    return out


def _signatures(texts: Sequence[str]) -> np.ndarray:
    """The 64 MinHash values of each normalised text's three-word shingles, one row per text
    (all 0xFFFFFFFF for a text without words, which is then nobody's near duplicate). Words are
    hashed over the UTF-8 bytes of the whole batch at once, not one by one."""
    out = np.tile(_EMPTY, (len(texts), 1))
    words, owner = _word_hashes(texts)
    if not len(words):
        return out
    shingles, of = _shingles(words, owner, len(texts))
    order = np.argsort(of, kind="stable")
    shingles, of = shingles[order], of[order]
    starts = np.flatnonzero(np.r_[True, of[1:] != of[:-1]])
    mixed = _mix(shingles)
    # 64 hash functions from two 32-bit halves (h1 + i * h2): one pass of 32-bit arithmetic
    low = mixed.astype(np.uint32)
    high = (mixed >> np.uint64(32)).astype(np.uint32) | np.uint32(1)
    hashed = _mix32(low[None, :] + _STEPS[:, None] * high[None, :])
    out[of[starts]] = np.minimum.reduceat(hashed, starts, axis=1).T
    return out


def _word_hashes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """A 64-bit hash of every word of ``texts`` (a polynomial over its bytes, mixed) and the
    position of the text it is in."""
    joined = "\n".join(texts).encode("utf-8")
    b = np.frombuffer(joined, dtype=np.uint8)
    if not len(b):
        return np.zeros(0, np.uint64), np.zeros(0, np.intp)
    gap = (b == 32) | (b == 10)
    first = ~gap & np.r_[True, gap[:-1]]
    starts = np.flatnonzero(first)
    if not len(starts):
        return np.zeros(0, np.uint64), np.zeros(0, np.intp)
    at = np.arange(len(b))
    offset = at - np.maximum.accumulate(np.where(first, at, 0))
    powers = np.cumprod(np.r_[np.uint64(1), np.full(int(offset.max()), _PRIME, np.uint64)])
    part = np.where(gap, np.uint64(0), (b.astype(np.uint64) + np.uint64(1)) * powers[offset])
    words = _mix(np.add.reduceat(part, starts))
    owner = np.searchsorted(np.flatnonzero(b == 10), starts)
    return words, owner


def _shingles(words: np.ndarray, owner: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The three-word shingles of each text (a text of one or two words: one shingle of them)
    and the text each belongs to."""
    same = owner[:-2] == owner[2:] if len(words) >= SHINGLE_WORDS else np.zeros(0, bool)
    three = (words[:-2] * _SHINGLE_MIX[0] + words[1:-1] * _SHINGLE_MIX[1] + words[2:])[same] \
        if len(same) else np.zeros(0, np.uint64)
    counts = np.bincount(owner, minlength=n)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    short = np.flatnonzero((counts > 0) & (counts < SHINGLE_WORDS))
    second = np.where(counts[short] > 1, words[np.minimum(first[short] + 1, len(words) - 1)],
                      np.uint64(0))
    few = words[first[short]] * _SHINGLE_MIX[0] + second * _SHINGLE_MIX[1]
    return np.r_[three, few], np.r_[owner[:-2][same] if len(same) else owner[:0], short]


@dataclass(frozen=True)
class Duplicates:
    """The duplicate chunks of a corpus: ``exact`` groups (ids with identical text, in corpus
    order, each group ordered by its first chunk) and ``near`` pairs (id, id, estimated
    similarity), neither of which is an exact duplicate of the other."""

    chunks: int
    exact: tuple[tuple[str, ...], ...] = ()
    near: tuple[tuple[str, str, float], ...] = ()
    # False when the cap on candidate pairs stopped the near-duplicate search early
    near_complete: bool = True

    @property
    def exact_chunks(self) -> int:
        return sum(len(g) for g in self.exact)

    def twins(self) -> dict[str, tuple[str, ...]]:
        """Chunk id → the other chunks with identical text (only chunks that have some)."""
        return {c: tuple(x for x in g if x != c) for g in self.exact for c in g}

    def lines(self) -> list[str]:
        """What a person should know, one line per kind found (none when there are none)."""
        out = []
        if self.exact:
            shown = "; ".join(" = ".join(g[:3]) + (" = …" if len(g) > 3 else "")
                              for g in self.exact[:_EXAMPLES])
            more = (f" and {len(self.exact) - _EXAMPLES} more group(s)"
                    if len(self.exact) > _EXAMPLES else "")
            out.append(
                f"{self.exact_chunks} of {self.chunks} chunks have identical text, in "
                f"{len(self.exact)} group(s) ({shown}{more}): a query that expects one is "
                "answered by any of them; the gate counts an identical twin in the top K as "
                "found and says so (policy twins_count_as_found), or remove the copies")
        if self.near:
            shown = "; ".join(f"{a} ~ {b} ({s:.2f})" for a, b, s in self.near[:_EXAMPLES])
            more = (f" and {len(self.near) - _EXAMPLES} more"
                    if len(self.near) > _EXAMPLES else "")
            out.append(
                f"{len(self.near)} pair(s) of chunks are near duplicates, sharing about 90 % or "
                f"more of their three-word sequences ({shown}{more}): if both answer the same "
                "questions, list them in the golden set as {any: [A, B]}")
        if not self.near_complete:
            out.append(f"the near-duplicate search stopped after {MAX_CANDIDATE_PAIRS:,} "
                       "candidate pairs (many chunks share long passages): the near "
                       "duplicates listed are some, not all")
        return out

    def to_dict(self, *, limit: int | None = None) -> dict[str, Any]:
        """Counts, and the groups and pairs themselves (the first ``limit`` of each)."""
        return {"exact_groups": len(self.exact), "exact_chunks": self.exact_chunks,
                "near_pairs": len(self.near), "near_complete": self.near_complete,
                "exact": [list(g) for g in self.exact[:limit]],
                "near": [{"a": a, "b": b, "similarity": round(s, 3)}
                         for a, b, s in self.near[:limit]]}


class DuplicateFinder:
    """Finds the duplicates among chunks given one at a time (:meth:`add`), keeping 264 bytes
    per chunk, then :meth:`result`. ``near=False`` looks for exact duplicates only."""

    def __init__(self, *, near: bool = True) -> None:
        self.near = near
        self.ids: list[str] = []
        self._digests = array("Q")
        self._signatures = array("I")
        self._pending: list[str] = []

    def add(self, chunk: Chunk) -> None:
        text = duplicate_text(chunk)
        self.ids.append(chunk.id)
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
        self._digests.append(int.from_bytes(digest, "little"))
        if self.near:
            self._pending.append(text)
            if len(self._pending) >= _BATCH:
                self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._signatures.frombytes(_signatures(self._pending).tobytes())
            self._pending = []

    def extend(self, chunks: Iterable[Chunk]) -> DuplicateFinder:
        for c in chunks:
            self.add(c)
        return self

    def result(self) -> Duplicates:
        self._flush()
        n = len(self.ids)
        digests = np.frombuffer(self._digests, dtype=np.uint64) if n else np.zeros(0, np.uint64)
        groups, first = _exact_groups(digests)
        exact = tuple(tuple(self.ids[i] for i in g) for g in groups)
        if not self.near or n < 2:
            return Duplicates(n, exact)
        signatures = np.frombuffer(self._signatures, dtype=np.uint32).reshape(n, MINHASH_VALUES)
        pairs, complete = _near_pairs(signatures, first)
        near = tuple((self.ids[a], self.ids[b], s) for a, b, s in pairs)
        return Duplicates(n, exact, near, complete)


def find_duplicates(chunks: Iterable[Chunk], *, near: bool = True) -> Duplicates:
    """The exact (and, with ``near``, near) duplicates among ``chunks``."""
    return DuplicateFinder(near=near).extend(chunks).result()


def _exact_groups(digests: np.ndarray) -> tuple[list[list[int]], np.ndarray]:
    """Groups of positions with equal digests (two or more, in order), and a mask of the
    positions that stand for their text: every chunk but the later copies in a group."""
    keep = np.ones(len(digests), dtype=bool)
    if len(digests) < 2:
        return [], keep
    order = np.argsort(digests, kind="stable")
    ordered = digests[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(ordered)]
    groups = [sorted(order[s:e].tolist()) for s, e in zip(starts, ends) if e - s > 1]
    for g in groups:
        keep[g[1:]] = False
    return sorted(groups), keep


def _near_pairs(signatures: np.ndarray, keep: np.ndarray
                ) -> tuple[list[tuple[int, int, float]], bool]:
    """Pairs of kept, non-empty chunks whose MinHash values agree in ``NEAR_AGREE`` or more of
    64 places, found through the bands; and whether every candidate pair was compared."""
    rows = np.flatnonzero(keep & (signatures != np.uint32(0xFFFFFFFF)).any(axis=1))
    candidates: list[np.ndarray] = []
    total, complete = 0, True
    for band in range(MINHASH_VALUES // BAND_ROWS):
        block = signatures[rows, band * BAND_ROWS:(band + 1) * BAND_ROWS]
        found = _band_pairs(rows, block, len(signatures), MAX_CANDIDATE_PAIRS - total)
        if found is None:
            complete = False
            break
        candidates.append(found)
        total += len(found)
    if not candidates:
        return [], complete
    pairs = np.unique(np.concatenate(candidates))
    if not len(pairs):
        return [], complete
    n = np.uint64(len(signatures))
    a, b = (pairs // n).astype(np.intp), (pairs % n).astype(np.intp)
    agree = (signatures[a] == signatures[b]).sum(axis=1)
    near = agree >= NEAR_AGREE
    out = [(int(x), int(y), float(s) / MINHASH_VALUES)
           for x, y, s in zip(a[near], b[near], agree[near])]
    return sorted(out), complete


def _band_pairs(rows: np.ndarray, block: np.ndarray, n: int, room: int) -> np.ndarray | None:
    """Every pair of ``rows`` whose band values are equal, coded ``a * n + b`` (a < b); None
    when there are more than ``room``."""
    if not len(rows):
        return np.zeros(0, np.uint64)
    keys = np.ascontiguousarray(block).view(np.dtype((np.void, block.dtype.itemsize
                                                      * block.shape[1]))).ravel()
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(ordered)]
    sizes = ends - starts
    many = sizes > 1
    if int((sizes[many] * (sizes[many] - 1) // 2).sum()) > room:
        return None
    out = []
    for s, e in zip(starts[many], ends[many]):
        members = np.sort(rows[order[s:e]]).astype(np.uint64)
        i, j = np.triu_indices(len(members), k=1)
        out.append(members[i] * np.uint64(n) + members[j])
    return np.concatenate(out) if out else np.zeros(0, np.uint64)
