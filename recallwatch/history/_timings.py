"""A run's per-call timings as stored (migration ``0007_run_timings``): apart from its result JSON,
one row per series, so that the cost rule of a later run reads them call for call.

The gate's result carries them in ``cost["samples"]`` (``search_ms``, ``embed_ms``) and
``cost["baseline"]["search_ms"]`` (the baseline's index timed interleaved); the stored result JSON
leaves them out and :func:`attach_timings` puts them back on loading.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["attach_timings", "split_timings"]

# series name -> where it sits in the result's ``cost``
_SERIES: dict[str, tuple[str, str]] = {
    "search_ms": ("samples", "search_ms"),
    "embed_ms": ("samples", "embed_ms"),
    "baseline.search_ms": ("baseline", "search_ms"),
}


def split_timings(cost: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None,
                                                   list[tuple[str, int, bytes]]]:
    """``cost`` without its per-call timings (a copy; the result is left as it is), and the
    rows ``(series, calls, compressed values)`` that hold them."""
    if not cost:
        return (None if cost is None else dict(cost)), []
    out = dict(cost)
    rows: list[tuple[str, int, bytes]] = []
    for series, (part, key) in _SERIES.items():
        holder = out.get(part)
        if not isinstance(holder, Mapping) or key not in holder:
            continue
        values = list(holder[key] or [])
        out[part] = {k: v for k, v in holder.items() if k != key}
        rows.append((series, len(values), zlib.compress(json.dumps(values).encode("ascii"))))
    return out, rows


def attach_timings(result: dict[str, Any], rows: Sequence[tuple[Any, Any]]) -> None:
    """Put stored ``(series, compressed values)`` rows back into a loaded result dict."""
    cost = result.get("cost")
    if not isinstance(cost, dict) or not rows:
        return
    for series, blob in rows:
        where = _SERIES.get(str(series))
        if where is None:
            continue
        part, key = where
        holder = cost.setdefault(part, {})
        if isinstance(holder, dict):
            holder[key] = json.loads(zlib.decompress(bytes(blob)).decode("ascii"))
