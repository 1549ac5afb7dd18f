"""The permission fields: a corpus chunk's `acl` and a golden query's `groups`, read, written back
and refused with their file, line, record and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recallwatch.errors import InputError
from recallwatch.formats.corpus import chunk_to_record, read_corpus, write_corpus
from recallwatch.formats.golden import load_golden


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_acl_round_trips_and_changes_the_hash(tmp_path: Path, suffix: str) -> None:
    records = [{"id": "a", "text": "x", "acl": ["hr", "legal", "hr"]},
               {"id": "b", "text": "x", "acl": []}, {"id": "c", "text": "x"}]
    a, b, c = read_corpus(_jsonl(tmp_path / "c.jsonl", records)).chunks
    assert (a.acl, b.acl, c.acl) == (("hr", "legal"), (), None)
    assert chunk_to_record(c) == {"id": "c", "text": "x"}  # no acl: the record (and hash) as before
    assert a.content_hash != c.content_hash
    out = tmp_path / f"out{suffix}"
    write_corpus([a, b, c], out)
    assert read_corpus(out).chunks == [a, b, c]


@pytest.mark.parametrize(("acl", "message"), [
    ("hr", r"c\.jsonl:1: record 'a': field 'acl': expected a list of the groups that may see"),
    (["hr", ""], r"field 'acl': expected group names: a non-empty string, found ''"),
    (["a|b"], r"field 'acl': expected group names: a name without \|"),
    ([3], r"field 'acl': expected group names: a non-empty string, found 3"),
])
def test_a_bad_acl_is_located(tmp_path: Path, acl: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_corpus(_jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "x", "acl": acl}]))


def test_the_reserved_facet_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"field 'facets\.__acl__'.*write the groups that may "
                                         r"see the chunk as its acl field"):
        read_corpus(_jsonl(tmp_path / "c.jsonl",
                           [{"id": "a", "text": "x", "facets": {"__acl__": "|hr|"}}]))


def test_golden_groups(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("name: g\nqueries:\n  - {id: q1, text: t, expected: [a], groups: [hr, hr]}\n"
                    "  - {id: q2, text: t, expected: [a]}\n", encoding="utf-8")
    q1, q2 = load_golden(path).queries
    assert q1.groups == ("hr",) and q2.groups is None
    assert q1.to_dict()["groups"] == ["hr"] and "groups" not in q2.to_dict()
    path.write_text("name: g\nqueries:\n  - {id: q1, text: t, expected: [a], groups: hr}\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"g\.yaml:3: record 'q1': field 'groups': expected a "
                                         r"list of the asking user's groups, found 'hr'"):
        load_golden(path)
