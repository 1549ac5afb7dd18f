"""Reports of a gate run: terminal, JSON, Markdown, JUnit XML (HTML lives in report.html)."""

from __future__ import annotations

import json

from recallwatch.suite.model import GateResult

__all__ = ["to_json"]


def to_json(result: GateResult) -> str:
    """The SPEC §6 JSON object, pretty-printed, stable key order."""
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
