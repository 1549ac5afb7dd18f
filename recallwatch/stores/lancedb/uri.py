"""The ``lancedb://PATH?table=NAME&…`` URI: its parameters, checked before anything is opened
(the parameters are described in :mod:`recallwatch.stores.lancedb`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from recallwatch.errors import UsageError
from recallwatch.stores._uri import parse_store_uri, redact
from recallwatch.stores.lancedb.index import IndexType

__all__ = ["INDEX_TYPES", "check_index_type", "check_settings", "holds_tables", "open_arguments",
           "scratch_uri"]

INDEX_TYPES: tuple[str, ...] = get_args(IndexType)
_PARAMS = ("table", "index_threshold", "index_type", "nprobes", "ef", "refine_factor")


def check_index_type(index_type: str) -> None:
    if index_type not in INDEX_TYPES:
        raise UsageError(f"index_type must be one of {', '.join(INDEX_TYPES)}, "
                         f"found {index_type!r}")


def check_settings(index_type: str, **values: int | None) -> None:
    """Refuse an unknown index type, and a count below 1 (LanceDB would take 0 or a negative
    number and fail deep inside a query)."""
    check_index_type(index_type)
    for name, value in values.items():
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1, found {value}")


def open_arguments(uri: str) -> dict[str, Any]:
    """The arguments of ``LanceStore(…)`` that ``uri`` names (path, table and settings)."""
    parsed = parse_store_uri(uri)
    if parsed.scheme != "lancedb":
        raise UsageError(f"not a lancedb:// URI: {redact(uri)!r}")
    if not parsed.path:
        raise UsageError(f"store URI {redact(uri)!r} has no path: expected lancedb://PATH")
    from recallwatch._registry import suggest

    for key in parsed.params:
        if key not in _PARAMS:
            raise UsageError(f"lancedb:// URI parameter {key!r} is unknown"
                             f"{suggest(key, list(_PARAMS))}; valid: {', '.join(_PARAMS)}")
    p = parsed.params
    return {
        "path": parsed.path, "table": p.get("table") or "chunks",
        "index_threshold": _int_param(p, "index_threshold", 50_000, uri),
        "index_type": p.get("index_type", "IVF_HNSW_SQ"),
        "nprobes": _int_param(p, "nprobes", None, uri), "ef": _int_param(p, "ef", None, uri),
        "refine_factor": _int_param(p, "refine_factor", None, uri), "uri": uri,
    }


def scratch_uri(directory: str, index_type: str, refine_factor: int | None) -> str:
    """A new store under ``directory`` whose first write builds ``index_type``."""
    check_index_type(index_type)
    refine = "" if refine_factor is None else f"&refine_factor={refine_factor}"
    # index_threshold=1: the first write builds the index, whatever its size
    return (f"lancedb://{Path(directory) / index_type}?table=t&index_type={index_type}"
            f"&index_threshold=1{refine}")


def holds_tables(path: Path) -> bool:
    """Whether ``path`` is a LanceDB database directory (it holds ``NAME.lance`` tables)."""
    try:
        return path.is_dir() and any(p.suffix == ".lance" for p in path.iterdir())
    except OSError:
        return False


def _int_param(params: dict[str, str], key: str, default: int | None, uri: str) -> Any:
    if key not in params:
        return default
    try:
        value = int(params[key])
    except ValueError:
        raise UsageError(f"store URI {redact(uri)!r}: {key} must be an integer, "
                         f"found {params[key]!r}") from None
    if value < 1:  # LanceDB would take 0 or a negative number and fail deep inside a query
        raise UsageError(f"store URI {redact(uri)!r}: {key} must be at least 1, found {value}")
    return value
