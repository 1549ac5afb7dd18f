"""One progress display for every long loop (embedding, ingestion) and every run made of steps
(an experiment's builds and judgings), drawn on stderr.

Stdout stays clean for the JSON / table a pipeline reads; the display is transient and is not
drawn when stderr is not a terminal, unless forced (tests). A :func:`progress` bar started while
a :func:`steps` display is on screen is drawn as a line of that display, under its step.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["Advance", "Step", "progress", "steps"]


class Advance(Protocol):
    def __call__(self, n: int = 1) -> None: ...


class Step(Protocol):
    def __call__(self, description: str) -> None: ...


_ON_SCREEN: list[Any] = []  # the rich Progress drawn now, if any (one display at a time)


@contextmanager
def progress(total: int, description: str, *, enabled: bool = True) -> Iterator[Advance]:
    """Yield ``advance(n)``; a no-op when disabled, so callers need no branch."""
    if not enabled or total <= 0:
        yield lambda n=1: None
        return
    from recallwatch._terminal import shown

    with _display() as bar:
        task = bar.add_task(shown(description), total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)

        try:
            yield advance
        finally:
            bar.remove_task(task)


@contextmanager
def steps(total: int, title: str, *, enabled: bool = True) -> Iterator[Step]:
    """A run of ``total`` steps, drawn as one line: ``TITLE, step n of N: what it does``, the bar
    of the steps done, the time spent and the time left (once the steps done let it be
    estimated). Calling the yielded ``step(description)`` starts the next step; the one before
    it is then done. A no-op when disabled."""
    if not enabled or total <= 0:
        yield lambda description: None
        return
    from recallwatch._terminal import shown

    with _display() as bar:
        task = bar.add_task(shown(title), total=total)
        started = 0

        def step(description: str) -> None:
            nonlocal started
            if started:
                bar.advance(task, 1)
            started = min(started + 1, total)
            bar.update(task, description=shown(f"{title}, step {started} of {total}: "
                                               f"{description}"))
            bar.refresh()  # each step is drawn at least once, however short

        try:
            yield step
        finally:
            bar.remove_task(task)


@contextmanager
def _display() -> Iterator[Any]:
    """The rich Progress on screen: the one already drawn (a bar inside a run of steps), or a
    new one for as long as the block runs."""
    if _ON_SCREEN:
        yield _ON_SCREEN[-1]
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

    from recallwatch._terminal import unshown

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(),
        # the bar moves the cursor: it writes to the stream itself, not through the escaping
        # of user text (recallwatch._terminal); it shows only its own words and counts
        console=Console(file=unshown(sys.stderr)), transient=True,
    )
    with bar:
        _ON_SCREEN.append(bar)
        try:
            yield bar
        finally:
            _ON_SCREEN.pop()
