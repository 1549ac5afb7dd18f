"""One progress display for every long loop (embedding, ingestion, searching a golden set, a
sweep's configurations…) and every run made of steps (an experiment's builds and judgings),
drawn on stderr.

Stdout stays clean for the JSON / table a pipeline reads; the display is transient and is not
drawn when stderr is not a terminal, unless forced (tests). A :func:`progress` bar started while
a :func:`steps` display is on screen is drawn as a line of that display, under its step.

Who decides: a caller passes ``enabled``, or leaves it out and the display follows
:func:`shown_on_terminal`, which a command opens around its work (on when stderr is a terminal
and the output is not ``--format json``). The library draws its long loops without knowing
which command runs them; outside such a block (Python, pytest) nothing is drawn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

__all__ = ["LARGE_FILE", "Advance", "Step", "in_blocks", "progress", "shown_on_terminal", "steps",
           "tracked", "wanted"]

_T = TypeVar("_T")
# A file of at least this many bytes is read with a bar (a smaller one is read in a moment).
LARGE_FILE = 1 << 20
_WANTED: ContextVar[bool] = ContextVar("recallwatch_progress_wanted", default=False)


@contextmanager
def shown_on_terminal(enabled: bool = True) -> Iterator[bool]:
    """Inside the block, displays left to :func:`wanted` are drawn when ``enabled`` and stderr
    is a terminal (a command passes ``fmt is not json``). Yields whether they are."""
    import sys

    on = bool(enabled and sys.stderr.isatty())
    token = _WANTED.set(on)
    try:
        yield on
    finally:
        _WANTED.reset(token)


def wanted() -> bool:
    """Whether the command running asked for progress displays (see :func:`shown_on_terminal`),
    and no bar already counts the work being done (see :func:`progress`)."""
    return _WANTED.get() and not _OWNED[0]


class Advance(Protocol):
    def __call__(self, n: int = 1) -> None: ...


class Step(Protocol):
    def __call__(self, description: str) -> None: ...


_ON_SCREEN: list[Any] = []  # the rich Progress drawn now, if any (one display at a time)
_OWNED = [0]  # bars (and loops with a caller's own display) running now, outermost first


@contextmanager
def progress(total: int, description: str, *, enabled: bool | None = None,
             timed: bool = False) -> Iterator[Advance]:
    """Yield ``advance(n)``; a no-op when disabled, so callers need no branch. ``enabled``
    None: as the running command asked (:func:`wanted`). ``timed``: the work between advances
    is timed (search latency), so the bar is redrawn only when it advances (at most ten times a
    second), never by a thread drawing while the work runs.

    A bar counts its own work: inside it (and inside a loop whose caller said ``enabled``
    itself, drawn or not, such as an ingestion's), displays left to :func:`wanted` are not
    drawn, so the embedding of each batch does not flash a bar of its own."""
    show = (wanted() if enabled is None else enabled) and total > 0
    owns = show or enabled is not None
    _OWNED[0] += owns
    try:
        if not show:
            yield lambda n=1: None
            return
        from recallwatch._terminal import shown

        with _display(auto_refresh=not timed) as bar:
            task = bar.add_task(shown(description), total=total)
            bar.refresh()  # drawn at least once, however short the work
            drawn = [time.monotonic()]

            def advance(n: int = 1) -> None:
                bar.advance(task, n)
                if timed and time.monotonic() - drawn[0] >= 0.1:
                    bar.refresh()
                    drawn[0] = time.monotonic()

            try:
                yield advance
            finally:
                bar.remove_task(task)
    finally:
        _OWNED[0] -= owns


def in_blocks(n: int, block: int, description: str,
              work: Callable[[int, int], list[_T]]) -> list[_T]:
    """``work(start, end)`` over ``[0, n)`` cut in blocks of ``block``, concatenated, with a
    :func:`progress` bar counting the items done (a store searched for many queries)."""
    out: list[_T] = []
    with progress(n, description) as advance:
        for start in range(0, n, block):
            end = min(start + block, n)
            out += work(start, end)
            advance(end - start)
    return out


def tracked(items: Iterable[_T], total: int, description: str, *,
            enabled: bool | None = None, timed: bool = False) -> Iterator[_T]:
    """``items`` one by one, a :func:`progress` bar advancing by one each."""
    with progress(total, description, enabled=enabled, timed=timed) as advance:
        for item in items:
            yield item
            advance()


@contextmanager
def steps(total: int, title: str, *, enabled: bool | None = None,
          timed: bool = False) -> Iterator[Step]:
    """A run of ``total`` steps, drawn as one line: ``TITLE, step n of N: what it does``, the bar
    of the steps done, the time spent and the time left (once the steps done let it be
    estimated). Calling the yielded ``step(description)`` starts the next step; the one before
    it is then done. A no-op when disabled (``enabled`` None: as the command asked).
    ``timed``: redrawn only when a step starts (the steps measure latency)."""
    if not (wanted() if enabled is None else enabled) or total <= 0:
        yield lambda description: None
        return
    from recallwatch._terminal import shown

    with _display(auto_refresh=not timed) as bar:
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
def _display(*, auto_refresh: bool = True) -> Iterator[Any]:
    """The rich Progress on screen: the one already drawn (a bar inside a run of steps), or a
    new one for as long as the block runs (redrawn by a thread ten times a second unless
    ``auto_refresh`` is False)."""
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
        console=Console(file=unshown(sys.stderr)), transient=True, auto_refresh=auto_refresh,
        # stdout is the data a pipeline reads: never moved to the terminal's stderr by the bar
        redirect_stdout=False,
    )
    with bar:
        _ON_SCREEN.append(bar)
        try:
            yield bar
        finally:
            _ON_SCREEN.pop()
