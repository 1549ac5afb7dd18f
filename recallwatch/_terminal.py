"""What a ``recallwatch`` command writes to its standard output and error: user text shown, never
obeyed, and no secret.

A query, an id, a quote or a file name can hold control characters; written raw, an ESC sequence
in one clears the screen, moves the cursor or rewrites what the line says. The command line wraps
both streams in :class:`ShownStream` for the length of a command (output, notes, progress
messages and errors alike), so every control character arrives shown as ``\\x1b``, and every
secret remembered by :func:`recallwatch._redact.remember` arrives as ``***``.

Newlines and tabs are kept. On a terminal, colour and style changes (``ESC [ … m``, what the
reports' own styling writes) are kept too: they change how text looks, never where it goes. A
progress bar, which moves the cursor, writes to :func:`unshown` (the stream itself): it shows
only recallwatch's own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from recallwatch._redact import scrub

__all__ = ["ShownStream", "shown", "shown_streams", "table_lines", "unshown"]

# C0 controls but newline and tab, DEL, and the C1 controls (0x9b is a one-character CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_STYLE = re.compile(r"\x1b\[[0-9;]*m")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    # DEL and C1 as \u00NN: a JSON string keeps its value (json.dumps leaves them raw), and the
    # text reads the same everywhere else
    return f"\\x{code:02x}" if code < 0x7f else f"\\u{code:04x}"


def shown(text: str, *, styles: bool = False) -> str:
    """``text`` with its control characters escaped (newlines and tabs kept; with ``styles``,
    colour and style sequences too)."""
    if not styles:
        return _CONTROL.sub(_escape, text)
    kept = _STYLE.split(text)
    marks = _STYLE.findall(text)
    out = [_CONTROL.sub(_escape, kept[0])]
    for mark, part in zip(marks, kept[1:], strict=True):
        out += [mark, _CONTROL.sub(_escape, part)]
    return "".join(out)


class ShownStream:
    """A text stream that writes to ``stream`` every text shown (:func:`shown`) and scrubbed of
    remembered secrets; everything else (``flush``, ``fileno``, ``isatty``…) is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.unshown = stream
        try:
            self._styles = bool(stream.isatty())
        except (AttributeError, ValueError, OSError):
            self._styles = False

    def write(self, text: Any) -> int:
        if not isinstance(text, str):  # bytes are the stream's business (and its TypeError)
            return int(self.unshown.write(text))
        self.unshown.write(shown(scrub(text), styles=self._styles))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unshown, name)


def unshown(stream: Any) -> Any:
    """The stream under a :class:`ShownStream` (for a progress bar's cursor moves), or
    ``stream`` itself."""
    return stream.unshown if isinstance(stream, ShownStream) else stream


@contextmanager
def shown_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` wrapped in :class:`ShownStream` inside the block (the
    streams found at its end are restored to the ones found at its start)."""
    import sys

    before = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, ShownStream) and sys.stdout is not None:
        sys.stdout = ShownStream(sys.stdout)
    if not isinstance(sys.stderr, ShownStream) and sys.stderr is not None:
        sys.stderr = ShownStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = before


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1,
                breaks: Iterable[int] = ()) -> list[str]:
    """A table as every recallwatch command prints one in the terminal: the header, a rule of
    dashes under it, columns two spaces apart, the first ``left`` columns (names) aligned left
    and the others (numbers) right; a rule again before each row index in ``breaks`` (the mean
    after the per-query rows). The numbers come formatted: a measure's value with 4 decimals, a
    delta with its sign."""
    cells = [list(header), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    before = set(breaks)
    out = [line(header), rule]
    for i, r in enumerate(rows):
        if i in before:
            out.append(rule)
        out.append(line(r))
    return out
