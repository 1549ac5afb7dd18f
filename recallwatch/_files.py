"""Writing files whole: a reader sees the old content or the new, never half of it.

Everything recallwatch writes for others to read (reports, probe sets, store metadata, benchmark
outputs, index files) goes through here:

* :func:`write_atomic` writes text or bytes;
* :func:`atomic_path` lends a temporary path to a library that writes files itself (h5py,
  matplotlib, pyarrow, faiss);
* :func:`atomic_dir` builds a set of files in a temporary directory and puts it in place whole;
* :func:`file_lock` is the lock of a read-modify-write that other processes may do at once
  (store metadata, a judgments file that two judges' pages write).

Temporary files and directories are created as ``open()`` and ``mkdir`` create them (mode 0666 and
0777 less the umask), so results get the permissions every other tool gives: 0644 under umask 022,
0600 under 077. (``tempfile.mkstemp`` would make every report 0600 whatever the umask.)
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["atomic_dir", "atomic_path", "file_lock", "write_atomic"]


def _sibling(target: Path, kind: str) -> Path:
    """A hidden, unused-looking name beside ``target`` that keeps its suffix (matplotlib and numpy
    choose the format by it)."""
    return target.with_name(f".{target.stem}.{secrets.token_hex(4)}.{kind}{target.suffix}")


def _new_file(target: Path) -> Path:
    while True:
        tmp = _sibling(target, "tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; when the block completes it replaces ``path``
    in one rename (flushed to disk first). If the block fails, ``path`` is left as it was."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_file(target)
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(target.parent)  # the rename itself survives a crash


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole, replacing what was there."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


@contextmanager
def atomic_dir(path: str | os.PathLike[str],
               check: Callable[[Path], None] = lambda _p: None) -> Iterator[Path]:
    """An empty temporary directory beside ``path`` to fill; when the block completes it takes
    the place of ``path`` whole (an existing directory there is replaced, and removed).

    ``check(path)`` runs before anything is written and again before an existing directory is
    moved aside; it raises to refuse replacing what is there. A reader sees the old set, then
    for an instant no directory, then the new set; never part of one. A process killed in
    between leaves the complete set, or the old one, in a hidden ``.NAME.*`` sibling.
    """
    target = Path(path)
    if target.is_symlink():  # replace the directory it points to, not the link
        target = target.resolve()
    check(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = _sibling(target, "tmp")
        try:
            os.mkdir(tmp, 0o777)
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        for child in tmp.iterdir():
            _fsync(child)
        _fsync(tmp)
        _swap_in(tmp, target, check)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(new: Path, target: Path, check: Callable[[Path], None]) -> None:
    moved_aside: list[Path] = []
    # Another writer may put its own set in place between our two renames: try again.
    for _ in range(100):
        try:
            os.rename(new, target)  # takes the place of an absent target or an empty directory
            break
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        check(target)
        aside = _sibling(target, "old")
        try:
            os.rename(target, aside)
        except FileNotFoundError:
            continue
        moved_aside.append(aside)
    else:
        raise OSError(errno.EBUSY, f"{target} keeps being replaced by another writer")
    _fsync(target.parent)
    for old in moved_aside:
        shutil.rmtree(old, ignore_errors=True)


class _Held:
    """This process's hold on one lock file: a re-entrant thread lock, and the open file that
    carries the flock while any holder in this process is inside."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.handle: IO[str] | None = None


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child holds none of its parent's locks (a thread of the parent may have held one).
    global _HELD_GUARD
    _HELD.clear()
    _HELD_GUARD = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its directory, if missing): against
    other processes through ``flock``, against other threads of this process through a thread
    lock. Re-entrant within a thread, whichever object asks: a second ``flock`` on another
    descriptor of the same file would wait for the first forever."""
    key = str(path.absolute())
    with _HELD_GUARD:
        held = _HELD.setdefault(key, _Held())
    with held.lock:
        if held.depth == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(path, "a")  # noqa: SIM115 - held across the yield, closed below
            try:
                fcntl.flock(handle, fcntl.LOCK_EX)
            except BaseException:
                handle.close()
                raise
            held.handle = handle
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0 and held.handle is not None:
                fcntl.flock(held.handle, fcntl.LOCK_UN)
                held.handle.close()
                held.handle = None
