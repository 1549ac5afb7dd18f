"""A small reranker for the experiment example (docs/experiments.md): it re-scores each candidate
by the share of the question's words (four letters or more, accents ignored) that its text
contains, the first-stage rank breaking ties. It stands in for a cross-encoder, which would have
to be downloaded; a real one is named in a plan as ``rerank: {cross_encoder: PATH}``."""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\w{4,}")


def _words(text: str) -> set[str]:
    plain = unicodedata.normalize("NFKD", text.lower())
    return set(_WORD.findall("".join(ch for ch in plain if not unicodedata.combining(ch))))


def overlap(query: str, docs: list[tuple[str, str]]) -> list[float]:
    """One score per (chunk id, text): higher is better."""
    wanted = _words(query) or {""}
    return [len(wanted & _words(text)) / len(wanted) - rank * 1e-6
            for rank, (_, text) in enumerate(docs)]
