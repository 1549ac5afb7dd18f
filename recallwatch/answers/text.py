"""What the judges compare: an answer's statements, a passage's units, and the numbers in both.

* A **statement** (a claim) is a sentence of the answer (the sentence splitter of
  :mod:`recallwatch.formats.sentences`, each line apart), kept when it has at least three words
  or a number: "Sí." states nothing a passage could back or contradict.
* A passage's **units** are what a statement is compared with: its sentences, and for a table
  (lines of tab-separated cells) each row after the header, read with the header ("Tramo
  Cuota (€/mes) … G5 1.850 - 2.030 … 370").
* The **numbers** of a text are its runs of digits, zero decimals dropped and separators removed
  ("1.166,70" → "116670", "1.772,00" → "1772", "7 %" → "7"), so that "2.000" and "2000" are one
  number; a code such as "G5" or "P01" is not a number. A statement is backed only by a passage
  that holds each of its numbers: sentence embeddings barely tell "30 días" from "45 días".
"""

from __future__ import annotations

import re

from recallwatch.formats.golden import normalise_quote
from recallwatch.formats.sentences import split_sentences

__all__ = ["contains", "numbers_of", "statements", "units"]

_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?!\w)")
_WORD = re.compile(r"\w+")
_MIN_WORDS = 3


_ZERO_DECIMALS = re.compile(r"[.,]0{1,2}$")  # ",00", ".0"; not ".000", a thousands group


def numbers_of(text: str) -> frozenset[str]:
    """The numbers of ``text``: zero decimals dropped ("1.772,00" is "1.772"), then the
    separators."""
    return frozenset(_ZERO_DECIMALS.sub("", m.group()).replace(".", "").replace(",", "")
                     for m in _NUMBER.finditer(text))


def statements(answer: str) -> list[str]:
    """The statements of an answer that can be checked, in order."""
    out = []
    for line in answer.splitlines():
        for sentence in split_sentences(line) if line.strip() else []:
            if len(_WORD.findall(sentence)) >= _MIN_WORDS or numbers_of(sentence):
                out.append(sentence)
    return out


def units(passage: str) -> list[str]:
    """The sentences of a passage, a table's rows each read with its header."""
    lines = [line for line in passage.splitlines() if line.strip()]
    out: list[str] = []
    header: str | None = None
    for line in lines:
        if "\t" in line:
            cells = " ".join(c.strip() for c in line.split("\t") if c.strip())
            if header is None:
                header = cells
                out.append(cells)
            else:
                out.append(f"{header} {cells}")
            continue
        header = None
        out += split_sentences(line)
    return out


def contains(text: str, statement: str) -> bool:
    """``statement`` appears in ``text`` word for word (case, spaces and a final full stop
    aside)."""
    needle = normalise_quote(statement).rstrip(".")
    return bool(needle) and needle in normalise_quote(text)
