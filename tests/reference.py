"""The reference implementations the tests check recallwatch against (ranx, pytrec_eval,
pyndeval, trectools, ir_measures: all in the ``dev`` extra).

Where one is missing, a check against it cannot pass silently: in CI (the ``CI`` environment
variable set) the test fails and names the install command; on a developer's machine it is
skipped with the same words.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

__all__ = ["reference_library"]


def reference_library(name: str) -> ModuleType:
    """The module ``name``; a failure in CI when it is not installed, else a skip (also at a
    module's top level)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        why = (f"{name}, a reference implementation the tests check against, is not installed: "
               "pip install -e '.[dev]'")
        if os.environ.get("CI"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why, allow_module_level=True)
