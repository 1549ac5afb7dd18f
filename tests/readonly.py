"""A file or folder nobody may write, for the tests of what a writer says then.

Without root, its write permission is taken away. Root ignores permissions, so there the path is
made immutable (``chattr +i``), which binds root too; where that is not possible either (no
``chattr``, a file system without the flag, no CAP_LINUX_IMMUTABLE) the test is skipped, saying
why. Either way the path is writable again when the block ends.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["read_only"]


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    if os.geteuid() != 0:
        mode = stat.S_IMODE(path.stat().st_mode)
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    made = chattr is not None and subprocess.run(
        [chattr, "+i", str(path)], capture_output=True, check=False).returncode == 0
    if not made:
        pytest.skip(f"as root, {path} can be made read-only only with chattr +i, which failed "
                    "here")
    try:
        yield
    finally:
        subprocess.run([str(chattr), "-i", str(path)], check=True)
