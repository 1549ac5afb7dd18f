"""Results as pandas or polars DataFrames, whichever the user works in (neither is imported
until a frame is asked for; a missing one names its pip extra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from recallwatch.errors import NotInstalledError, UsageError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["FRAME_LIBRARIES", "Frame", "to_frame"]

Frame = Literal["pandas", "polars"]
FRAME_LIBRARIES: tuple[str, ...] = ("pandas", "polars")


def to_frame(data: pa.Table | Sequence[Mapping[str, Any]], library: Frame = "pandas") -> Any:
    """``data`` (an Arrow table, or rows as dicts with the same keys) as a DataFrame of
    ``library``."""
    if library not in FRAME_LIBRARIES:
        raise UsageError(f"unknown DataFrame library {library!r}; valid: pandas, polars")
    try:
        module = __import__(library)
    except ImportError:
        raise NotInstalledError(library, "frames") from None
    if isinstance(data, Sequence):
        return module.DataFrame(list(data))
    return data.to_pandas() if library == "pandas" else module.from_arrow(data)
