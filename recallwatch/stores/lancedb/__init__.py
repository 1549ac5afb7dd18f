"""The embedded default store: LanceDB, one package.

``store`` holds :class:`LanceStore` (the adapter the registry opens); ``uri`` parses its URIs,
``open`` and ``read`` hold its table (read through pylance without importing ``lancedb``),
``search`` answers a search, ``table`` writes rows and versions, ``index`` and ``manifest`` build,
record and publish its ANN indexes. Importing this package imports none of them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LanceStore"]


def __getattr__(name: str) -> Any:
    if name == "LanceStore":
        from recallwatch.stores.lancedb.store import LanceStore

        return LanceStore
    raise AttributeError(f"module 'recallwatch.stores.lancedb' has no attribute {name!r}")
