"""A golden set's ``as_of``: the day its questions describe, on which the gate judges validity
windows. Read as a date, refused with its location otherwise, and not part of the set's hash."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from recallwatch.errors import InputError
from recallwatch.formats.golden import load_golden

BODY = 'name: kb\nversion: "1"\nqueries:\n  - {id: q1, text: hola, expected: [c1]}\n'


def write(tmp_path: Path, head: str) -> Path:
    path = tmp_path / "golden.yaml"
    path.write_text(head + BODY, encoding="utf-8")
    return path


def test_as_of_is_read_as_a_date_and_not_hashed(tmp_path: Path) -> None:
    undated = load_golden(write(tmp_path, ""))
    assert undated.as_of is None
    dated = load_golden(write(tmp_path, "as_of: 2025-06-01\n"))
    assert dated.as_of == date(2025, 6, 1)
    quoted = load_golden(write(tmp_path, 'as_of: "2025-06-01"\n'))
    assert quoted.as_of == date(2025, 6, 1)
    assert dated.hash == undated.hash == quoted.hash  # it changes no expectation


@pytest.mark.parametrize("value", ["yesterday", "2025-13-01", "[2025]", "20250601"])
def test_a_bad_as_of_names_the_file_and_field(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, f"as_of: {value}\n")
    with pytest.raises(InputError) as info:
        load_golden(path)
    message = str(info.value)
    assert str(path) in message
    # a date YAML itself cannot read ("2025-13-01") is refused by the YAML reader, naming it
    assert ("as_of" in message and "YYYY-MM-DD" in message) or f"'{value}'" in message
