"""One progress bar for every long loop (embedding, ingestion), drawn on stderr.

Stdout stays clean for the JSON / table a pipeline reads; the bar is transient and is not drawn
when stderr is not a terminal, unless forced (tests).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["Advance", "progress"]


class Advance(Protocol):
    def __call__(self, n: int = 1) -> None: ...


@contextmanager
def progress(total: int, description: str, *, enabled: bool = True) -> Iterator[Advance]:
    """Yield ``advance(n)``; a no-op when disabled, so callers need no branch."""
    if not enabled or total <= 0:
        yield lambda n=1: None
        return
    import sys

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from recallwatch._terminal import shown, unshown

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(),
        # the bar moves the cursor: it writes to the stream itself, not through the escaping
        # of user text (recallwatch._terminal); it shows only its own words and counts
        console=Console(file=unshown(sys.stderr)), transient=True,
    )
    with bar:
        task = bar.add_task(shown(description), total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)

        yield advance
