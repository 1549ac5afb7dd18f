"""The Cranfield 1400 collection (SMART format) as documents, queries and graded qrels.

Two pitfalls of the distribution are handled here, once:

* ``cran.qry`` numbers its queries 001, 002, 004, 008, ... (not sequential), while ``cranqrel``
  numbers them 1..225 in the order they appear in ``cran.qry``. Queries are therefore returned
  with the id ``cranqrel`` uses (their position, as a string: "1".."225"), and the original
  ``.I`` number is kept alongside.
* ``cranqrel`` codes relevance 1 (a complete answer) .. 4 (minimum interest), and -1 on one line
  per query (no documented meaning). Gains must grow with relevance, so the grade is
  ``5 - code``: code 1 -> grade 4, 2 -> 3, 3 -> 2, 4 -> 1, and -1 -> grade 0 (judged, not
  relevant). Code 5 ("no interest") never occurs; it would map to 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from recallwatch._files import read_capped
from recallwatch.errors import InputError

__all__ = ["CranfieldQuery", "grade_of_code", "read_documents", "read_qrels", "read_queries"]


@dataclass(frozen=True)
class CranfieldQuery:
    query_id: str  # "1".."225": the number cranqrel uses (position in cran.qry)
    original_id: str  # the .I number in cran.qry ("001", "002", "004", ...)
    text: str


def grade_of_code(code: int) -> int:
    """The documented gain mapping: code 1 (most relevant) -> 4 ... code 4 -> 1; -1 or 5 -> 0."""
    return 5 - code if 1 <= code <= 4 else 0


def _records(path: Path) -> list[tuple[int, str, dict[str, str]]]:
    """(line of .I, id, {field letter: text}) for each ``.I`` record of a SMART file."""
    lines = read_capped(path, "a Cranfield file").decode("utf-8").splitlines()
    records: list[tuple[int, str, dict[str, list[str]]]] = []
    field = ""
    for number, line in enumerate(lines, 1):
        if line.startswith(".I"):
            records.append((number, line[2:].strip(), {}))
            field = ""
        elif len(line) >= 2 and line[0] == "." and line[1].isalpha() and line[2:].strip() == "":
            field = line[1]
            if records:
                records[-1][2].setdefault(field, [])
        elif records and field:
            records[-1][2][field].append(line)
        elif line.strip():
            raise InputError(
                source=path, line=number, expected="a '.I id' record first", found=line.strip()
            )
    return [
        (n, rid, {k: " ".join(" ".join(v).split()) for k, v in fields.items()})
        for n, rid, fields in records
    ]


def read_queries(path: str | PathLike[str]) -> list[CranfieldQuery]:
    """``cran.qry``: queries in file order, numbered 1.. as ``cranqrel`` numbers them."""
    return [
        CranfieldQuery(str(position), original, fields.get("W", ""))
        for position, (_, original, fields) in enumerate(_records(Path(path)), 1)
    ]


def read_documents(path: str | PathLike[str]) -> dict[str, str]:
    """``cran.all.1400``: document id -> title and abstract (``.T`` + ``.W``)."""
    return {
        rid: f"{fields.get('T', '')} {fields.get('W', '')}".strip()
        for _, rid, fields in _records(Path(path))
    }


def read_qrels(path: str | PathLike[str]) -> dict[str, dict[str, int]]:
    """``cranqrel``: ``{query_id: {doc_id: grade}}`` with grade = :func:`grade_of_code`."""
    source = Path(path)
    lines = read_capped(source, "a cranqrel file").decode("utf-8").splitlines()
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        try:
            query, doc, code = fields[0], fields[1], int(fields[2])
            if len(fields) != 3:
                raise ValueError
        except (IndexError, ValueError):
            raise InputError(
                source=source, line=number, expected="'query doc code'", found=line.strip()
            ) from None
        qrels.setdefault(query, {})[doc] = grade_of_code(code)
    return qrels
