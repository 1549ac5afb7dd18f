"""Running a command in a fresh Python whose stderr is a real terminal (a pseudo-terminal,
``pty``) or a pipe: what a person at a terminal sees, and what a pipeline gets.

Progress displays are drawn only on a terminal; tests of them run the command both ways."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path


def run(args: list[str], folder: Path, *, terminal: bool) -> tuple[int, str, str]:
    """``recallwatch ARGS`` in ``folder``, its stderr a terminal (or a pipe): exit code,
    stdout, stderr as the terminal received it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200",
           "TERM": "xterm"}
    stdout = folder / "stdout.txt"
    argv = [sys.executable, "-m", "recallwatch", *args]
    with stdout.open("wb") as out:
        if not terminal:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, env=env, cwd=folder,
                                  timeout=600, check=False)
            return done.returncode, stdout.read_text(encoding="utf-8"), done.stderr.decode()
        main, other = pty.openpty()
        with subprocess.Popen(argv, stdout=out, stderr=other, env=env, cwd=folder) as proc:
            os.close(other)
            received = bytearray()
            while True:
                try:
                    block = os.read(main, 1 << 16)
                except OSError:  # the command has ended and closed its side
                    break
                if not block:
                    break
                received += block
            os.close(main)
            code = proc.wait(timeout=600)
    return code, stdout.read_text(encoding="utf-8"), received.decode("utf-8", "replace")
