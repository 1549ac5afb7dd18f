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
* **Memory Arrow keeps.** pyarrow's default allocator (mimalloc) keeps what it has freed and
  gives each of the CSV reader's threads memory of its own: ``eval`` of 10,000 queries peaked at
  224-241 MB and of 1,000,000 queries at 343 MB, against 170-182 MB and 288 MB with jemalloc
  (which pyarrow's Linux builds include and which returns freed memory after a short delay), in
  the same time; the system allocator gave 172-189 MB and 347 MB. The command process asks for
  jemalloc on Linux and the system allocator elsewhere (``ARROW_DEFAULT_MEMORY_POOL``, which
  pyarrow reads when it first allocates) unless the variable is set already; a library process
  keeps pyarrow's own choice.
* **Teardown.** After a command has returned, finalising the modules of pyarrow, pylance and
  numpy took 0.1-0.2 s. :func:`leave` runs the exit handlers (``atexit``: logging, temporary
  directories, worker pools), flushes the standard streams and ends the process without it.
* **A reader that went away.** When the output goes into a pipe whose reader leaves before it has
  taken all of it (``recallwatch gate … | head -c 10``), the process ends with 141, as the shell
  reports a program that SIGPIPE ended, whatever the command's own code. Output that fits in the
  pipe is written at once, so :func:`leave` waits (at most :data:`DRAIN_WAIT` seconds) for the
  reader to take it or to leave: which of the two happened decides the code, not how fast the
  writing was.
"""

from __future__ import annotations

import atexit
import errno
import os
import select
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from typing import Any, NoReturn

__all__ = ["DRAIN_WAIT", "SIGPIPE_STATUS", "leave", "mark_command_line", "reader_left",
           "without_pandas"]

# The exit status when the output's reader has gone, as the shell reports a program that
# SIGPIPE ended (128 + 13).
SIGPIPE_STATUS = 141

# How long leave() waits, at most, for a pipe's reader to take the output written into it.
DRAIN_WAIT = 2.0

_command_line = False


def mark_command_line() -> None:
    """This process is the ``recallwatch`` command: start light, leave at once."""
    global _command_line
    _command_line = True
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL",
                          "jemalloc" if sys.platform.startswith("linux") else "system")


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
    handlers have run and the output is written, without finalising every module. The code is
    141 when the output's reader went away before taking all of it."""
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
        except BrokenPipeError:
            status = SIGPIPE_STATUS
        except (OSError, ValueError):  # a closed stream: nothing more can be written anyway
            status = status or SIGPIPE_STATUS
    if status != SIGPIPE_STATUS and reader_left(1):
        status = SIGPIPE_STATUS
    os._exit(status)


def reader_left(fd: int, wait: float | None = None) -> bool:
    """Whether ``fd`` is a pipe whose reader went away before reading everything written into
    it. Waits, at most ``wait`` seconds (default :data:`DRAIN_WAIT`), while the reader is there
    and output is still unread."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        import fcntl
        import termios

        watch = select.poll()
        watch.register(fd, 0)  # a pipe with no reader left reports POLLERR, asked for or not
        deadline = time.monotonic() + (DRAIN_WAIT if wait is None else wait)
        while True:
            if any(events & select.POLLERR for _, events in watch.poll(0)):
                return True
            unread = int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, bytes(4)), sys.byteorder)
            if unread == 0 or time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
    except OSError as exc:  # no pipe after all, or a platform without these calls
        return exc.errno == errno.EPIPE
    except (ImportError, AttributeError, ValueError):
        return False
