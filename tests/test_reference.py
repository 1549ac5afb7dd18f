"""A check against a reference implementation cannot pass silently when the library is missing:
in CI it fails, naming the install command; elsewhere it is skipped with the same words."""

from __future__ import annotations

import pytest

from tests.reference import reference_library

MISSING = "recallwatch_no_such_reference_library"
WHY = (f"{MISSING}, a reference implementation the tests check against, is not installed: "
       "pip install -e '.[dev]'")


def test_a_missing_reference_library_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"^" + WHY.replace(".", r"\.")
                       .replace("[", r"\[").replace("]", r"\]") + "$"):
        reference_library(MISSING)


def test_a_missing_reference_library_is_skipped_elsewhere(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        reference_library(MISSING)
    assert str(skipped.value) == WHY


def test_a_present_reference_library_is_the_module() -> None:
    import json

    assert reference_library("json") is json
