"""Calling the user's own code — a ``python:`` retriever or reranker, a callable embedder — so that
nothing it does can choose recallwatch's exit code, write into its report, or hang it.

One :class:`UserCode` guard per piece of user code; every call into that code (importing its
module, building it, each search) goes through :meth:`UserCode.call`:

* **What it prints goes to standard error.** Standard output carries the report (``--format
  json`` must stay one JSON object), so a ``print()`` in the user's module or function lands on
  standard error for the length of the call.
* **It cannot end the program.** ``sys.exit()`` (any :class:`SystemExit`) and any other
  :class:`BaseException` that is not an :class:`Exception` become an
  :class:`~recallwatch.errors.InputError` naming the code and what it was doing (exit 2): the
  exit code is recallwatch's to set, and 0 would read as ACCEPT. :class:`KeyboardInterrupt`
  stays what it is, the user's Ctrl-C.
* **Its failures are named.** An :class:`Exception` becomes the guard's error class
  (:class:`~recallwatch.errors.RetrieverError` by default) naming the code, what it was doing and
  the exception; a recallwatch error raised inside it is already worded and passes unchanged.
* **It cannot hang the command.** With a ``timeout``, the calls run on a worker thread of the
  guard's own (one thread for the import and every call, so that what the module opens at import,
  a database connection, works in its calls), and a call that has not returned after ``timeout``
  seconds is an error naming the setting to raise. A thread cannot be killed: it is left behind
  as a daemon thread, which never keeps the process alive, and the guard starts a new one if it
  is called again. Without a timeout the code runs on the calling thread.
"""

from __future__ import annotations

import contextlib
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from recallwatch.errors import InputError, RecallwatchError, RetrieverError

__all__ = ["MAX_TIMEOUT", "UserCode", "check_timeout"]

T = TypeVar("T")

MAX_TIMEOUT = 86_400.0  # seconds: a day per call is the longest timeout a setting may ask for


def check_timeout(value: object, *, field: str, source: str | None = None,
                  line: int | None = None) -> float:
    """``value`` as a timeout in seconds (a number from 0.001 to a day); anything else is an
    :class:`InputError` naming the setting (``field``, in ``source`` at ``line``) and the
    value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.001 <= value <= MAX_TIMEOUT:
        raise InputError(source=source, line=line, field=field,
                         expected=f"a number of seconds from 0.001 to {MAX_TIMEOUT:g} (a day)",
                         found=value)
    return float(value)


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # a thread ended by SystemExit would end silently
            self.error = exc
        finally:
            self.done.set()


class _Worker:
    """A daemon thread running jobs in turn until it is told to stop (None)."""

    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=_serve, args=(self.jobs,), name=name, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.jobs.put(None)


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        job.run()


@dataclass
class UserCode:
    """The guard around one piece of the user's code (see the module's documentation).

    ``what`` names the code in messages (``retriever 'mine' (python:my_search:search)``),
    ``returns`` what it must return instead of ending the program (``its results``),
    ``timeout`` bounds each call in seconds (None: no bound, on the calling thread), and
    ``raise_timeout`` tells where that bound is set (a sentence, for the timeout's message).
    """

    what: str
    returns: str
    timeout: float | None = None
    raise_timeout: str = ""
    error: type[RecallwatchError] = RetrieverError
    _worker: _Worker | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def call(self, fn: Callable[..., T], *args: Any, during: str, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, guarded; ``during`` says what the call is doing, as a
        message continues ``… raised KeyError`` (``on query 'holidays'``)."""
        job = _Job(fn, args, kwargs)
        with self._lock, contextlib.redirect_stdout(sys.stderr):
            if self.timeout is None:
                job.run()
            else:
                self._worker_for_now().jobs.put(job)
                if not job.done.wait(self.timeout):
                    self._abandon()
                    raise self.error(
                        f"{self.what} did not return {during} within {self.timeout:g} s, its "
                        "timeout; it was left running and nothing more was asked of it. "
                        f"{self.raise_timeout}".rstrip())
        if job.error is not None:
            raise self._reworded(job.error, during) from None
        return job.value  # type: ignore[no-any-return]

    def close(self) -> None:
        """Let the worker thread end (a guard that is called again starts a new one)."""
        with self._lock:
            self._abandon()

    def _worker_for_now(self) -> _Worker:
        if self._worker is None:
            self._worker = _Worker(f"recallwatch: {self.what}")
            weakref.finalize(self, self._worker.stop)  # a guard forgotten lets its thread end
        return self._worker

    def _abandon(self) -> None:
        if self._worker is not None:
            self._worker.stop()  # ends it once (if ever) its current call returns
            self._worker = None

    def _reworded(self, exc: BaseException, during: str) -> BaseException:
        if isinstance(exc, (KeyboardInterrupt, RecallwatchError)):
            return exc
        if isinstance(exc, SystemExit):
            code = "" if exc.code is None else repr(exc.code)
            return InputError(f"{self.what} called sys.exit({code}) {during}: it must return "
                              f"{self.returns}, never end the program (the exit code is "
                              "recallwatch's to set)")
        told = f": {exc}" if str(exc) else ""
        if not isinstance(exc, Exception):
            return InputError(f"{self.what} raised {type(exc).__name__}{told} {during}: it must "
                              f"return {self.returns}, or raise an Exception to report a failure")
        return self.error(f"{self.what} raised {type(exc).__name__} {during}{told}")
