"""Where recallwatch keeps what it can rebuild (parsed runs, the USE model): one rule for all.

``$RECALLWATCH_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/recallwatch``, else
``~/.cache/recallwatch``; each cache in its own subdirectory (``runs``, ``models``,
``templates``: the HTML report's compiled templates). Setting
``RECALLWATCH_CACHE=0`` (or ``off``, ``false``, ``no``) turns every cache off. Nothing is ever
written beside the user's own files: their directory may be read-only, shared or under version
control.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_enabled", "user_cache"]

_OFF = {"0", "off", "false", "no"}


def cache_enabled() -> bool:
    return os.environ.get("RECALLWATCH_CACHE", "").strip().lower() not in _OFF


def user_cache(part: str, *, force: bool = False) -> Path | None:
    """The directory of the cache named ``part`` (not created); None when caching is off, unless
    ``force``."""
    if not force and not cache_enabled():
        return None
    explicit = os.environ.get("RECALLWATCH_CACHE_DIR")
    if explicit:
        root = Path(explicit).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base).expanduser() / "recallwatch"
    return root / part
