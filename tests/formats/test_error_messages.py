"""How an InputError shows what it found: whole when short, cut in one place when long."""

from __future__ import annotations

import pytest

from recallwatch.errors import DatasetError, InputError


def test_short_values_are_shown_whole() -> None:
    err = InputError(source="f.txt", line=3, record="q1", field="rel", expected="an integer",
                     found="x", hint="a hint")
    assert str(err) == "f.txt:3: record 'q1': field 'rel': expected an integer, found 'x' (a hint)"


def test_descriptions_in_angle_brackets_are_not_quoted() -> None:
    assert str(InputError(expected="a file", found="<no such file>")) == (
        "expected a file, found <no such file>"
    )
    # a value that merely starts with '<' is a value
    assert str(InputError(expected="a number", found="<b")) == "expected a number, found '<b'"


def test_non_string_values_are_repr() -> None:
    assert str(InputError(expected="a list", found=None)) == "expected a list, found None"
    assert str(InputError(expected="a str", found=12)) == "expected a str, found 12"


def test_a_megabyte_value_is_cut_to_a_readable_length() -> None:
    value = "a" * 500_000 + "b" * 500_000
    err = InputError(source="big.txt", line=7, expected="a grade", found=value)
    assert str(err) == (
        f"big.txt:7: expected a grade, found '{'a' * 70}…{'b' * 20}' (1,000,000 characters)"
    )
    assert err.found == value


def test_a_long_description_keeps_its_closing_bracket() -> None:
    description = f"<9 columns: '{'x' * 300}'>"
    found = str(InputError(expected="4 columns", found=description)).split("found ", 1)[1]
    assert found == f"<9 columns: '{'x' * 57}…{'x' * 18}'> (315 characters)"


def test_a_long_record_and_a_long_non_string_are_cut_too() -> None:
    err = InputError(record="q" * 200, expected="a list", found=list(range(100)))
    text = str(err)
    assert text.startswith(f"record '{'q' * 70}…{'q' * 20}' (200 characters): expected a list, ")
    assert text.endswith("96, 97, 98, 99] (390 characters)")


@pytest.mark.parametrize("length", [119, 120, 121])
def test_the_limit_is_120_characters(length: int) -> None:
    text = str(InputError(expected="x", found="<" + "y" * (length - 2) + ">"))
    shown = text.removeprefix("expected x, found ")
    assert (len(shown) == length) == (length <= 120)
    assert len(shown.split(" (")[0]) <= 120


def test_subclasses_share_the_formatting() -> None:
    assert "(5,000 characters)" in str(DatasetError(expected="a chunk id", found="c" * 5000))
