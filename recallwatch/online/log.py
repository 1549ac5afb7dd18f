"""Interaction logs: JSON Lines, one search impression per line, read as a stream.

A log is never loaded whole: :class:`InteractionLog` yields one validated :class:`Impression` at a
time, so a 1 GB log costs the memory of one line plus whatever the consumer aggregates. Plain or
gzip (detected by its magic bytes, not its name). The file's SHA-256 is computed while it is read,
so every figure derived from a log can name exactly which bytes it came from.

Every bad line is an :class:`~recallwatch.errors.InputError` that names the file, the line, the
field, what was expected and what was found. Unknown keys are ignored: the format is extended by
adding keys (SPEC §6, "Interaction log").
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import zlib
from array import array
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Any

from recallwatch._files import line_cap, line_too_long
from recallwatch._progress import LARGE_FILE, Advance, progress
from recallwatch.errors import InputError
from recallwatch.formats.fields import check_trec_id
from recallwatch.formats.structured import parse_json_value

__all__ = ["Impression", "InteractionLog", "LogSummary", "parse_timestamp", "trec_ids"]

Team = str  # "A" or "B" when interleaving two rankers; any name when multileaving more
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class Impression:
    """One result list shown to a user, and what the user did with it.

    ``click_positions`` are 1-based indexes into ``shown`` in the order the clicks were logged;
    ``click_ts`` and ``click_dwell_ms`` are aligned with them (None where the log omits them).
    ``teams`` is set only for interleaved impressions, aligned with ``shown``.
    """

    line: int
    query_id: str | None
    query: str | None
    shown: tuple[str, ...]
    click_positions: tuple[int, ...]
    ts: datetime | None = None
    session: str | None = None
    user: str | None = None
    variant: str | None = None
    scores: tuple[float | None, ...] | None = None
    teams: tuple[Team, ...] | None = None
    click_ts: tuple[datetime | None, ...] = ()
    click_dwell_ms: tuple[int | None, ...] = ()
    conversion: bool | None = None
    latency_ms: float | None = None
    domain: str | None = None  # the query's subject area, when the application knows it

    @property
    def query_key(self) -> str:
        """What identifies the query: its id when logged, else its text."""
        return self.query_id if self.query_id is not None else str(self.query)

    @property
    def clicked_ids(self) -> tuple[str, ...]:
        return tuple(self.shown[p - 1] for p in self.click_positions)


@dataclass
class LogSummary:
    """What was read: filled in as the log streams, complete once iteration ends."""

    path: str
    sha256: str = ""
    lines: int = 0
    impressions: int = 0
    complete: bool = False
    duplicate_lines: int = 0  # lines byte for byte identical to an earlier line (still counted)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "lines": self.lines,
                "impressions": self.impressions, "duplicate_lines": self.duplicate_lines}


class _HashingReader(io.RawIOBase):
    """Passes bytes through while hashing them: one read of the file gives lines and digest."""

    def __init__(self, raw: io.BufferedReader, advance: Advance | None = None) -> None:
        self._raw = raw
        self.digest = hashlib.sha256()
        self.advance = advance  # a progress bar over the file's bytes
        self.seen = 0  # bytes read so far

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)
        if n:
            self.digest.update(memoryview(buffer)[:n])
            self.seen += n
            if self.advance is not None:
                self.advance(n)
        return n or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


class InteractionLog:
    """A JSONL interaction log, iterated as validated :class:`Impression` objects.

    Each iteration re-reads the file from the start; after a complete iteration ``summary``
    holds the line and impression counts and the SHA-256 of the file's bytes.
    """

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = Path(path)
        self.summary = LogSummary(str(self.path))

    def __iter__(self) -> Iterator[Impression]:
        summary = LogSummary(str(self.path))
        source = str(self.path)
        try:
            raw = self.path.open("rb")
        except FileNotFoundError:
            raise InputError(source=source, expected="an interaction log (JSONL)",
                             found="<no such file>") from None
        except IsADirectoryError:
            raise InputError(source=source, expected="an interaction log (JSONL)",
                             found="<a directory>") from None
        except PermissionError:
            raise InputError(source=source, expected="a readable file",
                             found="<permission denied>") from None
        hashing = _HashingReader(raw)
        buffered = io.BufferedReader(hashing, 1 << 20)
        stream: Any = buffered
        if buffered.peek(2)[:2] == _GZIP_MAGIC:
            stream = gzip.GzipFile(fileobj=buffered, mode="rb")
        number = 0
        rankers = _Rankers(source)
        # one 64-bit hash per line (8 bytes each) to count exact duplicates at the end
        line_hashes = array("q")
        cap = line_cap()
        bar = ExitStack()
        try:
            # a large log's reading is shown on a terminal (the bar counts the file's bytes)
            size = os.fstat(raw.fileno()).st_size
            hashing.advance = bar.enter_context(progress(
                size if size >= LARGE_FILE else 0, f"reading {self.path.name}"))
            hashing.advance(hashing.seen)  # what the first look at its head read
            while True:
                try:
                    raw_line = stream.readline(cap + 1)
                except (OSError, EOFError, zlib.error) as exc:
                    raise InputError(source=source, line=number + 1,
                                     expected="a complete gzip stream", found=f"<{exc}>") from None
                if not raw_line:
                    break
                number += 1
                if len(raw_line) > cap and not raw_line.endswith(b"\n"):
                    raise line_too_long(source, number)
                if number == 1 and raw_line.startswith(b"\xef\xbb\xbf"):
                    raw_line = raw_line[3:]
                if not raw_line.strip():
                    continue
                summary.lines = number
                summary.impressions += 1
                line_hashes.append(hash(raw_line.strip()))
                impression = parse_line(raw_line, source=source, line=number)
                rankers.check(impression)
                yield impression
            # drain what is left (a gzip trailer) so that the digest covers every byte
            while buffered.read(1 << 20):
                pass
        finally:
            stream.close()
            buffered.close()
            bar.close()
        summary.lines = number
        if summary.impressions == 0:
            raise InputError(source=source, expected="at least one impression (a JSON object "
                             "per line)", found="<an empty log>")
        summary.sha256 = hashing.digest.hexdigest()
        summary.duplicate_lines = _duplicates(line_hashes)
        summary.complete = True
        self.summary = summary


class _Rankers:
    """The rankers of an interleaved log, as its impressions name them: a name that appears only
    after a list long enough to have shown every ranker did not show it is not one of them.

    A team draft gives every ranker a result in each round (interleaving two, multileaving
    more), so a list of L results shows min(L, rankers) of them. A list showing at least two
    teams is the evidence (a list of one team is what a ranker with no results gives); when a
    new name comes after evidence at least as long as the rankers it would make, it is refused:
    a typo, or lines of another experiment."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.known: set[str] = set()
        self.longest = 0  # the longest list that showed two teams or more ...
        self.line = 0  # ... and its line

    def check(self, imp: Impression) -> None:
        if imp.teams is None:
            return
        teams = set(imp.teams)
        new = teams - self.known
        if new and self.longest >= len(self.known | new):
            position, team = next((i, t) for i, t in enumerate(imp.teams, 1) if t in new)
            shown = ", ".join(sorted(self.known))
            raise InputError(
                source=self.source, line=imp.line, record=imp.query_id,
                field=f"shown[{position}].team",
                expected=f"one of this log's rankers, {shown} (line {self.line} shows "
                f"{self.longest} results of these alone, and a team draft gives every ranker a "
                "result in a list that long)", found=team,
                hint="a typo, or lines of another experiment in this log?")
        self.known |= teams
        if len(teams) >= 2 and len(imp.shown) > self.longest:
            self.longest, self.line = len(imp.shown), imp.line


def trec_ids(impressions: Iterable[Impression], source: str) -> Iterator[Impression]:
    """The impressions, each checked to name its query and shown results with ids a TREC file
    can hold (no whitespace): for labels that go to a qrels file. The first that cannot is an
    InputError naming its line and field."""
    for imp in impressions:
        check_trec_id(imp.query_key, "query_id", source=source, line=imp.line,
                      **({} if imp.query_id is not None else {
                          "expected": "a query_id without whitespace (without one, the "
                          "query's text names it)", "found": "<nothing>"}))
        for position, doc in enumerate(imp.shown, 1):
            check_trec_id(doc, f"shown[{position}].id", source=source, line=imp.line,
                          record=imp.query_key)
        yield imp


def parse_line(raw: bytes | str, *, source: str = "<log>", line: int = 1) -> Impression:
    """Validate one log line into an :class:`Impression` (InputError names what is wrong)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise InputError(source=source, line=line, expected="UTF-8 text",
                         found=f"<byte at column {exc.start + 1}>") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg} at column {exc.colno})", source=source,
                         line=line) from None
    except (ValueError, RecursionError):  # a number too long, nesting too deep
        obj = parse_json_value(text, source, line)  # the shared reader says which, and raises
    if "\\ud" in text.lower():  # maybe a lone surrogate escape: the shared reader
        obj = parse_json_value(text, source, line)  # refuses it, located (pairs pass)
    if not isinstance(obj, dict):
        raise InputError(source=source, line=line, expected="a JSON object (one impression)",
                         found=f"<{_kind(obj)}>")
    return _Validator(obj, source, line).impression()


class _Validator:
    def __init__(self, obj: dict[str, Any], source: str, line: int) -> None:
        self.obj = obj
        self.source = source
        self.line = line
        qid = obj.get("query_id")
        self.record = qid if isinstance(qid, str) else None

    def fail(self, field_name: str, expected: str, found: object) -> InputError:
        return InputError(source=self.source, line=self.line, record=self.record,
                          field=field_name, expected=expected, found=found)

    def ident(self, key: str, value: object) -> str:
        if value is None:
            raise self.fail(key, "a non-empty string", "<nothing>")
        text = self.text(key, value)
        return "" if text is None else text

    def text(self, key: str, value: object) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(key, "a non-empty string", value if isinstance(value, str)
                            else f"<{_kind(value)}>")
        return value

    def time(self, key: str, value: object) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(key, "an ISO-8601 timestamp string", f"<{_kind(value)}>")
        parsed = parse_timestamp(value)
        if parsed is None:
            raise self.fail(key, "an ISO-8601 timestamp such as 2025-06-13T17:40:00Z, between "
                            "years 1 and 9999 once its offset is applied (in UTC)", value)
        return parsed

    def impression(self) -> Impression:
        o = self.obj
        query_id = self.text("query_id", o.get("query_id"))
        query = self.text("query", o.get("query"))
        if query_id is None and query is None:
            raise self.fail("query_id", "a query_id or a query (at least one)", "<neither>")
        shown, scores, teams = self.shown(o.get("shown", _MISSING))
        positions, click_ts, dwell = self.clicks(o.get("clicks", _MISSING), shown)
        conversion = o.get("conversion")
        if conversion is not None and not isinstance(conversion, bool):
            raise self.fail("conversion", "true or false", conversion)
        latency = o.get("latency_ms")
        if latency is not None:
            latency = self.number("latency_ms", latency, minimum=0.0)
        return Impression(
            line=self.line, query_id=query_id, query=query, shown=shown,
            click_positions=positions, ts=self.time("ts", o.get("ts")),
            session=self.text("session", o.get("session")), user=self.text("user", o.get("user")),
            variant=self.text("variant", o.get("variant")), scores=scores, teams=teams,
            click_ts=click_ts, click_dwell_ms=dwell, conversion=conversion, latency_ms=latency,
            domain=self.text("domain", o.get("domain")),
        )

    def number(self, key: str, value: object, *, minimum: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "a number", f"<{_kind(value)}>")
        number = float(value)
        if not math.isfinite(number) or (minimum is not None and number < minimum):
            bound = "" if minimum is None else f" ≥ {minimum:g}"
            raise self.fail(key, f"a finite number{bound}", value)
        return number

    def shown(
        self, value: object
    ) -> tuple[tuple[str, ...], tuple[float | None, ...] | None, tuple[Team, ...] | None]:
        # The happy path checks types with a few cheap operations per item; any doubt goes to
        # _explain_shown, which walks the items again to say exactly what is wrong and where.
        if type(value) is not list:
            raise self._explain_shown(value)
        ids: list[str] = []
        scores: list[Any] = []
        teams: list[Any] = []
        for item in value:
            if type(item) is not dict:
                raise self._explain_shown(value)
            doc = item.get("id")
            if type(doc) is not str or not doc:
                raise self._explain_shown(value)
            ids.append(doc)
            scores.append(item.get("score"))
            team = item.get("team")
            if team is not None:
                teams.append(team)
        if len(set(ids)) != len(ids):
            raise self._explain_shown(value)
        has_scores = any(score is not None for score in scores)
        if has_scores and not all(
            score is None or (type(score) in (int, float) and math.isfinite(score))
            for score in scores
        ):
            raise self._explain_shown(value)
        if teams and (len(teams) != len(ids)
                      or not all(type(t) is str and t for t in teams)):
            raise self._explain_shown(value)
        return (tuple(ids), tuple(float(x) if x is not None else None for x in scores)
                if has_scores else None, tuple(teams) if teams else None)

    def _explain_shown(self, value: object) -> InputError:
        if value is _MISSING:
            return self.fail("shown", "a list of shown results (required; may be empty)",
                             "<nothing>")
        if not isinstance(value, list):
            return self.fail("shown", "a list of {\"id\": …} objects", f"<{_kind(value)}>")
        seen: dict[str, int] = {}
        with_team = 0
        for i, item in enumerate(value, start=1):
            where = f"shown[{i}]"
            if not isinstance(item, dict):
                return self.fail(where, "an object {\"id\": …}", f"<{_kind(item)}>")
            try:
                doc = self.ident(f"{where}.id", item.get("id"))
                if item.get("score") is not None:
                    self.number(f"{where}.score", item["score"])
            except InputError as exc:
                return exc
            if doc in seen:
                return self.fail(f"{where}.id", f"ids shown once (already at position "
                                 f"{seen[doc]})", doc)
            seen[doc] = i
            team = item.get("team")
            if team is not None:
                with_team += 1
                if not isinstance(team, str) or not team:
                    return self.fail(f"{where}.team", "a ranker's name: \"A\" or \"B\" when "
                                     "interleaving two, any name when multileaving more",
                                     team if isinstance(team, str) else f"<{_kind(team)}>")
        missing = next((i for i, item in enumerate(value, 1) if item.get("team") is None), None)
        if missing is None:  # the fast path and this walk disagree: a bug, reported plainly
            return self.fail("shown", "valid shown results", "<an unexplained rejection>")
        return self.fail(f"shown[{missing}].team", "a team on every item of an interleaved "
                         "impression (or on none)", "<nothing>")

    def clicks(
        self, value: object, shown: tuple[str, ...]
    ) -> tuple[tuple[int, ...], tuple[datetime | None, ...], tuple[int | None, ...]]:
        if value is _MISSING:
            raise self.fail("clicks", "a list of clicks (required; [] when nothing was clicked)",
                            "<nothing>")
        if not value and type(value) is list:
            return (), (), ()
        if not isinstance(value, list):
            raise self.fail("clicks", "a list of {\"id\": …} objects", f"<{_kind(value)}>")
        index = {doc: i for i, doc in enumerate(shown, start=1)}
        positions: list[int] = []
        stamps: list[datetime | None] = []
        dwell: list[int | None] = []
        for i, item in enumerate(value, start=1):
            where = f"clicks[{i}]"
            if not isinstance(item, dict):
                raise self.fail(where, "an object {\"id\": …}", f"<{_kind(item)}>")
            doc = self.ident(f"{where}.id", item.get("id"))
            if doc not in index:
                raise self.fail(f"{where}.id", "the id of a shown result (a click on something "
                                "not shown)", doc)
            positions.append(index[doc])
            stamps.append(self.time(f"{where}.ts", item.get("ts")))
            ms = item.get("dwell_ms")
            if ms is not None and (isinstance(ms, bool) or not isinstance(ms, int) or ms < 0):
                raise self.fail(f"{where}.dwell_ms", "a whole number of milliseconds ≥ 0", ms)
            dwell.append(ms)
        return tuple(positions), tuple(stamps), tuple(dwell)


_MISSING = object()


def _duplicates(hashes: array[int]) -> int:
    """Lines whose hash was seen on an earlier line (a 64-bit hash: a false match among ten
    million lines has a chance of about one in 400,000). ``hashes`` is sorted in place and the
    equal neighbours counted: ``numpy.unique`` held several times the hashes' 8 B a line."""
    import numpy as np

    values = np.frombuffer(hashes, dtype=np.int64)
    values.sort()
    return int(np.count_nonzero(values[1:] == values[:-1]))


def parse_timestamp(text: str) -> datetime | None:
    """An ISO-8601 timestamp as an aware UTC datetime; naive times are taken as UTC. None when
    the text is not a timestamp."""
    try:
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: its offset takes it past year 1 or 9999
        return None


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)
