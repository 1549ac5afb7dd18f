"""What a ``recallwatch`` command-line process does that a library import must not: start light and
leave at once.

A gate on a small store waits about as long for Python to import and tear down its libraries as
for the work itself. Two costs are the process's own business, so only the console script
(:func:`recallwatch.cli.main`) opts in, through :func:`mark_command_line`; a program that
imports recallwatch keeps the ordinary behaviour.

* **pandas, imported for nothing.** ``import lance`` imports ``pyarrow.dataset``, whose module
  initialisation asks pyarrow whether pandas is installed, and pyarrow answers by importing it
  (measured: 0.17 s and 36 MB of a 1.5 s, 300 MB gate). recallwatch never hands pandas objects
  to pyarrow. :func:`without_pandas` makes that one check find no pandas; pyarrow records it
  and still imports pandas the first time a conversion to or from pandas is asked for, so
  nothing that needs pandas loses it. In a library process the user's own pandas objects may
  meet pyarrow, so nothing is hidden there.
* **Teardown.** After a command has returned, finalising the modules of pyarrow, pylance and
  numpy took 0.1-0.2 s. :func:`leave` runs the exit handlers (``atexit``: logging, temporary
  directories, worker pools), flushes the standard streams and ends the process without it.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from typing import Any, NoReturn

__all__ = ["leave", "mark_command_line", "without_pandas"]

_command_line = False


def mark_command_line() -> None:
    """This process is the ``recallwatch`` command: start light, leave at once."""
    global _command_line
    _command_line = True


class _NoPandas:
    """A finder that answers "not installed" for pandas, for the length of one import."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@contextmanager
def without_pandas() -> Iterator[None]:
    """Imports made inside do not import pandas, in the command-line process only (and only if
    pandas is not already imported)."""
    if not _command_line or "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def leave(code: object) -> NoReturn:
    """End the command-line process with ``code`` (as ``sys.exit`` takes it) once the exit
    handlers have run and the output is written, without finalising every module."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written anyway
            status = status or 141  # as the shell reports a program ended by SIGPIPE
    os._exit(status)
