"""``python -m recallwatch`` and the ``recallwatch`` script. ``recallwatch --version`` answers
here, without importing the command line (typer and every command module): a version check in a
CI step costs a Python start, no more."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from recallwatch._version import __version__

        sys.stdout.write(f"{__version__}\n")
        return
    from recallwatch.cli import main as command_line

    command_line()


if __name__ == "__main__":
    main()
