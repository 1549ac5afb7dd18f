"""Fixtures of the history tests (defined in helpers, so the CLI tests share them)."""

from tests.history.helpers import kb

__all__ = ["kb"]
