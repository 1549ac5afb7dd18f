"""A run's full result as stored: its JSON text, zlib-compressed (migration
``0005_compact_run_detail``).

The JSON text is the gate's, byte for byte (what ``history compare``, trends and the dashboard
read); compressed, the per-query detail of a run takes several times fewer bytes (measured in
docs/scaling.md). ``runs.result_json`` then holds an empty string and ``runs.result_zlib`` the
compressed text; a row written before the migration, if any is left, still reads from
``result_json``.
"""

from __future__ import annotations

import zlib
from typing import Any

__all__ = ["pack", "unpack"]

_LEVEL = 6  # zlib's default: within a few per cent of 9's size, several times faster


def pack(text: str) -> bytes:
    """The stored form of a result's JSON text."""
    return zlib.compress(text.encode("utf-8"), _LEVEL)


def unpack(result_json: str, result_zlib: Any) -> str:
    """The JSON text of a stored run: from ``result_zlib`` when set (bytes, or a buffer a
    driver returns), else ``result_json``."""
    if result_zlib is None:
        return result_json
    return zlib.decompress(bytes(result_zlib)).decode("utf-8")
