"""The local dashboard (``recallwatch ops serve``): runs, run and query drill-downs, trends, the
operations monitor and benchmark frontiers, read-only over the run history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recallwatch.web.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Lazy: importing recallwatch.web must not pull in Starlette (recallwatch --help stays fast).
    if name == "create_app":
        from recallwatch.web.app import create_app

        return create_app
    raise AttributeError(name)
