"""One hash for everything recallwatch identifies by content: golden sets, policies, gate and
benchmark configurations, probe sets, corpus chunks.

It is the sha256 of the value's canonical JSON: keys sorted, no whitespace, non-ASCII characters
as themselves in UTF-8 (not ``\\uXXXX`` escapes), anything JSON cannot hold as ``str(value)``.
These digests are recorded in histories and compared across runs: never change the encoding.
(Vectors are hashed by their bytes instead: :func:`recallwatch.bench.exact_knn.content_hash`.)
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_hash", "canonical_json"]


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_hash(obj: Any) -> str:
    """sha256 (hex) of the canonical JSON of ``obj``: equal content, equal hash, on any run."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()
