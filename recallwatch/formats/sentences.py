"""Cutting prose into sentences: the one splitter the product and the example re-chunker share.

A sentence ends at ``.``, ``!`` or ``?`` followed by white space and a capital letter (or an
opening ``¿``/``¡``). Requiring the capital keeps abbreviations and numbers whole ("arts. 28 y
30", "aprox. el 7 %"). Text with no capital letter at all (Cranfield abstracts are written in
lower case) is cut at every end mark followed by white space instead.
"""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

_END_BEFORE_CAPITAL = re.compile(r"(?<=[.!?])\s+(?=[¿¡A-ZÁÉÍÓÚÑ])")
_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str, *, capital: bool | None = None) -> list[str]:
    """The sentences of ``text``, in order, stripped; each one is a substring of ``text``.
    ``capital``: whether a sentence must start with a capital (default: when ``text`` has one)."""
    if capital is None:
        capital = any(ch.isupper() for ch in text)
    pattern = _END_BEFORE_CAPITAL if capital else _END
    return [s for s in (p.strip() for p in pattern.split(text.strip())) if s]
