"""Writing files whole (a reader sees the old content or the new, never half of it), and reading
user files within bounds.

Everything recallwatch writes for others to read (reports, probe sets, store metadata, benchmark
outputs, index files) goes through here:

* :func:`write_atomic` writes text or bytes;
* :func:`atomic_path` lends a temporary path to a library that writes files itself (h5py,
  matplotlib, pyarrow, faiss);
* :func:`atomic_dir` builds a set of files in a temporary directory and puts it in place whole;
* :func:`file_lock` is the lock of a read-modify-write that other processes may do at once
  (store metadata, a judgments file that two judges' pages write), or, without waiting, of a
  folder one process at a time may use (an experiment's output folder);
* :class:`RecordsFile` is such a read-modify-write for a small JSON Lines file of records that
  a person adds to one at a time (a judge's grades, the labels of answers);
* :func:`check_output_file`, :func:`check_output_dir` and :func:`output_dir` check a path a
  user named for output before the work that fills it (a folder where a file is to be written,
  a file where a folder is, a file in the way of its folders), and the writers above turn a
  path they cannot write (read-only folder, full disk) into a located
  :class:`~recallwatch.errors.InputError`, never an internal error;
* :func:`open_input`, :func:`capped_lines` and :func:`read_capped` are how every reader of a user
  file reads it: each line at most :func:`line_cap` bytes (16 MB), a file read whole at most
  :func:`file_cap` bytes (128 MB), both raised by an environment variable, so an endless input
  is a located error, never a process that fills memory.

Temporary files and directories are created as ``open()`` and ``mkdir`` create them (mode 0666 and
0777 less the umask), so results get the permissions every other tool gives: 0644 under umask 022,
0600 under 077. (``tempfile.mkstemp`` would make every report 0600 whatever the umask.)
"""

from __future__ import annotations

import errno
import fcntl
import gzip
import io
import json
import os
import secrets
import shutil
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from recallwatch.errors import InputError

__all__ = ["FILE_CAP_VARIABLE", "LINE_CAP_VARIABLE", "LineLimit", "RecordsFile", "atomic_dir",
           "atomic_path",
           "cannot_write", "capped_lines", "check_output_dir", "check_output_file",
           "check_writable", "file_cap", "file_lock", "line_cap", "line_too_long", "lock_holder",
           "open_input", "output_dir", "read_capped", "read_lines_whole", "write_atomic"]


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


# -- paths a user names for output ------------------------------------------------------------
def _is_folder(path: Path) -> bool:
    """A real folder at ``path`` (a symbolic link to one is a link, which a writer replaces)."""
    return path.is_dir() and not path.is_symlink()


def _check_parents(path: Path) -> None:
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(source=path, expected="a path inside a directory",
                                 found=f"<{parent} is a file>")
            return


def check_output_file(path: str | os.PathLike[str], option: str | None = None,
                      example: str | None = None) -> None:
    """Raise InputError unless a file can be written at ``path``: not a folder, and no file
    where one of its folders must be. ``option`` (and an ``example`` name) go into the hint.
    Run it before the work whose result goes there, so that a bad path stops the command first."""
    target = Path(path)
    _check_parents(target)
    if _is_folder(target):
        names = f"{option} names the file to write" if option else "name the file to write"
        raise InputError(source=target, expected="a file name", found="<a directory>",
                         hint=names + (f", e.g. {example}" if example else ", not a folder"))


def check_output_dir(path: str | os.PathLike[str], option: str | None = None) -> None:
    """Raise InputError unless ``path`` can be a folder to write into: absent, or a folder."""
    target = Path(path)
    _check_parents(target)
    if target.exists() and not target.is_dir():
        names = f"{option} names" if option else "give"
        raise InputError(source=target, expected="a directory", found="<a file>",
                         hint=f"{names} the directory to write the result files into")


def output_dir(path: str | os.PathLike[str], option: str | None = None) -> Path:
    """``path`` as a folder to write into, created with its parents when missing; a path that
    cannot be one is an InputError naming it (and ``option``)."""
    target = Path(path)
    check_output_dir(target, option)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(target, exc, "the directory") from None
    return target


def check_writable(path: str | os.PathLike[str], option: str | None = None) -> None:
    """:func:`check_output_file`, and a try that the file can be replaced there: a file is
    created and removed beside it, and an existing one opened to append (nothing is written).
    For a writer that saves later, such as a server: it refuses a read-only place before it
    starts, not at its first save."""
    target = Path(path)
    check_output_file(target, option)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _new_file(target).unlink()
        if target.exists():
            with open(target, "ab"):
                pass
    except OSError as exc:
        raise cannot_write(target, exc) from None


def cannot_write(path: str | os.PathLike[str], exc: OSError, what: str = "the file"
                 ) -> InputError:
    """The error for an output ``path`` the system refused (read-only folder, full disk…)."""
    reason = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
              errno.EROFS: "the file system is read-only", errno.ENOSPC: "no space left",
              errno.EDQUOT: "the disk quota is used up", errno.EISDIR: "it is a directory",
              errno.ENOTDIR: "a file stands where a folder must be",
              errno.EEXIST: "a file stands where a folder must be"}.get(
                  exc.errno or 0, (exc.strerror or str(exc)).lower())
    return InputError(f"cannot write {what}: {reason}", source=path,
                      hint="choose a path you may write to")


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; when the block completes it replaces ``path``
    in one rename (flushed to disk first). If the block fails, ``path`` is left as it was.

    A symbolic link at ``path`` is replaced by the file, never written through. A folder at
    ``path``, or a path the system refuses (read-only folder, full disk), is an InputError
    naming it; errors raised inside the block are left as they are."""
    target = Path(path)
    check_output_file(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _new_file(target)
    except OSError as exc:
        raise cannot_write(target, exc) from None
    try:
        yield tmp
        try:
            _fsync(tmp)
            os.replace(tmp, target)
        except OSError as exc:
            raise cannot_write(target, exc) from None
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
    check_output_dir(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _new_dir(target)
    except OSError as exc:
        raise cannot_write(target, exc, "the directory") from None
    try:
        yield tmp
        try:
            for child in tmp.iterdir():
                _fsync(child)
            _fsync(tmp)
            _swap_in(tmp, target, check)
        except OSError as exc:
            raise cannot_write(target, exc, "the directory") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _new_dir(target: Path) -> Path:
    while True:
        tmp = _sibling(target, "tmp")
        try:
            os.mkdir(tmp, 0o777)
        except FileExistsError:
            continue
        return tmp


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
def file_lock(path: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its directory, if missing): against
    other processes through ``flock``, against other threads of this process through a thread
    lock. Re-entrant within a thread, whichever object asks: a second ``flock`` on another
    descriptor of the same file would wait for the first forever.

    The operating system releases the lock when its process ends, however it ends (a kill
    included), so a lock left by a dead process never blocks. With ``wait=False`` a lock held
    elsewhere raises :class:`BlockingIOError` at once instead of waiting, and the holder writes
    its process id into the file for :func:`lock_holder` to read."""
    key = str(path.absolute())
    with _HELD_GUARD:
        held = _HELD.setdefault(key, _Held())
    if not held.lock.acquire(blocking=wait):
        raise BlockingIOError(errno.EWOULDBLOCK, "held by another thread", str(path))
    try:
        if held.depth == 0:
            held.handle = _flock(path, wait)
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0 and held.handle is not None:
                fcntl.flock(held.handle, fcntl.LOCK_UN)
                held.handle.close()
                held.handle = None
    finally:
        held.lock.release()


def _flock(path: Path, wait: bool) -> IO[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a")  # noqa: SIM115 - held by the caller, closed when released
    try:
        fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not wait:  # who holds it, for the message of the one that does not wait
            handle.truncate(0)
            handle.write(f"{os.getpid()}\n")
            handle.flush()
    except BaseException:
        handle.close()
        raise
    return handle


class RecordsFile:
    """A small JSON Lines file of records that every change replaces whole.

    The file is the only state: :meth:`records` reads it each time, and :meth:`change` reads
    it, edits the records and writes them back (:func:`write_atomic`) under the lock
    ``FILE.lock`` beside it (:func:`file_lock`). A process killed at any moment leaves the file
    as it was after the last change, and several processes (or threads) changing one file at
    once lose none of each other's records. ``read`` reads and checks the file's records (it is
    called only when the file exists); an empty file holds none."""

    def __init__(self, path: str | os.PathLike[str],
                 read: Callable[[Path], list[dict[str, Any]]]) -> None:
        self.path = Path(path)
        self._read = read
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists() or not self.path.read_bytes().strip():
            return []
        return self._read(self.path)

    def change(self, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
               ) -> list[dict[str, Any]]:
        """Replace the records by ``edit(records)``; returns the records as they were."""
        with file_lock(self._lock_path):
            before = self.records()
            after = edit(list(before))
            write_atomic(self.path, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                            for r in after))
        return before

    def remove_last(self, which: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        """Remove the last record ``which`` accepts, and return it (None: there is none)."""
        def last(records: list[dict[str, Any]]) -> int | None:
            return max((i for i, r in enumerate(records) if which(r)), default=None)

        before = self.change(lambda records: [r for i, r in enumerate(records)
                                              if i != last(records)])
        found = last(before)
        return None if found is None else before[found]


def lock_holder(path: Path) -> int | None:
    """The process id the holder of a ``file_lock(path, wait=False)`` wrote, when it can be
    read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and len(text) < 12 else None


# Reading user files within bounds: an endless input (/dev/zero, a pipe, a small gzip that
# inflates to gigabytes on one line) is refused at a cap, with its place, instead of filling
# memory. Lines are capped wherever a file is read line by line (JSONL, logs, TREC files of any
# size keep working: their lines are short); a file read whole (YAML, JSON) is capped as a whole.
LINE_CAP_VARIABLE = "RECALLWATCH_MAX_LINE_MB"
FILE_CAP_VARIABLE = "RECALLWATCH_MAX_FILE_MB"
_DEFAULT_LINE_MB = 16
_DEFAULT_FILE_MB = 128
_MB = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def starts_as_gzip(path: str | os.PathLike[str]) -> bool:
    """Whether the file begins as a gzip stream does (its two magic bytes), whatever its name."""
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def _cap(variable: str, default_mb: int) -> int:
    text = os.environ.get(variable, "").strip()
    try:
        mb = float(text) if text else float(default_mb)
    except ValueError:
        mb = float(default_mb)
    return max(1, int(mb * _MB)) if mb == mb and 0 < mb < 1 << 40 else default_mb * _MB


def line_cap() -> int:
    """The longest line, in bytes, a line-by-line reader accepts (16 MB; the environment
    variable RECALLWATCH_MAX_LINE_MB changes it)."""
    return _cap(LINE_CAP_VARIABLE, _DEFAULT_LINE_MB)


def file_cap() -> int:
    """The largest file, in bytes, a reader that reads a file whole accepts (128 MB; the
    environment variable RECALLWATCH_MAX_FILE_MB changes it)."""
    return _cap(FILE_CAP_VARIABLE, _DEFAULT_FILE_MB)


def _size(n: int) -> str:
    return f"{n / _MB:g} MB" if n >= _MB else f"{n:,} bytes"


def line_too_long(source: str | os.PathLike[str], line: int) -> Exception:
    """The error for a line over :func:`line_cap` (an :class:`~recallwatch.errors.InputError`)."""
    cap = line_cap()
    return InputError(source=source, line=line, expected=f"a line of at most {_size(cap)}",
                      found=f"<a longer line: more than {_size(cap)} without a line break>",
                      hint=f"is it a text file of this kind? set {LINE_CAP_VARIABLE} to raise "
                      "the limit")


def _unreadable(source: Path, exc: OSError, what: str) -> Exception:
    found = {FileNotFoundError: "<no such file>", IsADirectoryError: "<a directory>",
             PermissionError: "<permission denied>"}.get(type(exc), f"<{exc.strerror or exc}>")
    return InputError(source=source, expected=what, found=found)


def open_input(path: str | os.PathLike[str], what: str, *,
               gzipped: bool = True) -> io.BufferedIOBase:
    """``path`` opened to read bytes (a gzip file decompressed as it is read, when ``gzipped``),
    or an InputError saying what was expected (``what``) and what is there instead."""
    source = Path(path)
    try:
        raw = io.FileIO(source, "r")
    except OSError as exc:
        raise _unreadable(source, exc, what) from None
    buffered = io.BufferedReader(raw, _CHUNK)
    try:
        magic = buffered.peek(2)[:2]
    except OSError as exc:
        buffered.close()
        raise _unreadable(source, exc, what) from None
    if gzipped and magic == _GZIP_MAGIC:
        return _GzipInput(buffered)
    return buffered


class _GzipInput(gzip.GzipFile):
    """A gzip stream that closes the file it reads when it is closed."""
    def __init__(self, raw: io.BufferedReader[io.FileIO]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def bytes_read(stream: io.BufferedIOBase) -> Callable[[], int]:
    """How many bytes of the file under ``stream`` (compressed ones, for a gzip stream) have
    been read so far: what a progress bar over the file's size counts."""
    raw = stream._raw if isinstance(stream, _GzipInput) else stream
    return raw.tell


def capped_lines(stream: io.BufferedIOBase, source: str | os.PathLike[str],
                 first: int = 1) -> Iterator[bytes]:
    """The lines of ``stream`` (with their line break), each at most :func:`line_cap` bytes:
    a longer one raises, naming the line, before more of it is read. A damaged gzip stream
    raises an InputError at the line where it breaks."""

    cap = line_cap()
    number = first - 1
    while True:
        try:
            line = stream.readline(cap + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(source=source, line=number + 1, expected="a complete gzip stream",
                             found=f"<{exc}>") from None
        if not line:
            return
        number += 1
        if len(line) > cap and not line.endswith(b"\n"):
            raise line_too_long(source, number)
        yield line


def read_capped(path: str | os.PathLike[str], what: str, *, gzipped: bool = False) -> bytes:
    """A file's bytes, read whole but never more than :func:`file_cap` of them: a larger file
    (or an endless one, such as /dev/zero) is refused before it fills memory."""

    cap = file_cap()
    data = bytearray()
    with open_input(path, what, gzipped=gzipped) as stream:
        while len(data) <= cap:
            try:
                chunk = stream.read(min(_CHUNK, cap + 1 - len(data)))
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(source=path, expected="a complete gzip stream",
                                 found=f"<{exc}>") from None
            if not chunk:
                return bytes(data)
            data += chunk
    raise InputError(source=path, expected=f"a file of at most {_size(cap)}",
                     found=f"<more than {_size(cap)}>",
                     hint=f"set {FILE_CAP_VARIABLE} to raise the limit")


class LineLimit:
    """Pieces of one stream, fed in order, checked against :func:`line_cap`: :meth:`feed` raises,
    naming the line, as soon as a piece shows a line over the cap. Only the line that spans two
    pieces can be long when the cap is larger than a piece, so the check is then a search for
    the first and last line break of each piece; with a smaller cap every line is looked at."""

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self.source = source
        self.cap = line_cap()
        self.lines = 0  # line breaks in the pieces fed so far
        self._run = 0  # bytes since the last line break

    def feed(self, piece: bytes | bytearray) -> None:
        first = piece.find(b"\n")
        if first < 0:
            self._run += len(piece)
            if self._run > self.cap:
                raise line_too_long(self.source, self.lines + 1)
            return
        if self._run + first > self.cap:
            raise line_too_long(self.source, self.lines + 1)
        last = piece.rfind(b"\n")
        if last - first > self.cap:  # whole lines inside the piece may be long too
            self._check_inside(piece, first, last)
        self.lines += piece.count(b"\n")
        self._run = len(piece) - last - 1
        if self._run > self.cap:
            raise line_too_long(self.source, self.lines + 1)

    def _check_inside(self, piece: bytes | bytearray, first: int, last: int) -> None:
        number, start = self.lines + 2, first + 1
        while start <= last:
            end = piece.find(b"\n", start, last + 1)
            if end - start > self.cap:
                raise line_too_long(self.source, number)
            number, start = number + 1, end + 1


def read_lines_whole(stream: io.BufferedIOBase, source: str | os.PathLike[str]) -> bytes:
    """The rest of ``stream`` as one block of bytes, for formats parsed whole that have short
    lines (TREC files, of any size): a line over :func:`line_cap` raises, naming it, as soon as
    it is read (:class:`LineLimit`)."""

    limit = LineLimit(source)
    data = bytearray()
    while True:
        try:
            chunk = stream.read(_CHUNK)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(source=source, line=limit.lines + 1,
                             expected="a complete gzip stream", found=f"<{exc}>",
                             hint="the data ends or breaks on this line") from None
        if not chunk:
            return bytes(data)
        limit.feed(chunk)
        data += chunk
