"""Reports of a gate run: terminal, JSON, Markdown, JUnit XML and HTML.

:func:`write_report_set` writes the four files a CI job keeps (``report.json``, ``report.md``,
``junit.xml``, ``report.html``) for the gate command and the pytest plugin alike, whole or not
at all: the set is built in a hidden sibling directory and renamed into place, replacing an
earlier set there. :func:`visible` makes user-provided text (queries, ids) safe to print: every
line recallwatch shows goes through it. The charts' geometry is :mod:`recallwatch.report.plots`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from recallwatch._files import check_output_dir, check_output_file
from recallwatch.acceptance.model import GateResult
from recallwatch.errors import InputError
from recallwatch.report._text import md_escape, visible

__all__ = ["REPORT_FILES", "check_report_dir", "check_report_file", "json_parts", "md_escape",
           "to_json",
           "visible", "write_junit", "write_report_set"]

REPORT_FILES = ("report.json", "report.md", "junit.xml", "report.html")


def to_json(result: GateResult) -> str:
    """The gate's JSON object (docs/gate.md), pretty-printed, stable key order.

    The text is ``json.dumps(result.to_dict(), indent=2)``'s, built one query at a time: a
    query's dictionary is many times the size of its text, so a large run never holds all of
    them at once."""
    return "".join(json_parts(result))


def json_parts(result: GateResult) -> Iterator[str]:
    """:func:`to_json`'s text in pieces, one per query, for a writer that streams them."""
    def dumps(value: object) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)

    head = dumps(result.to_dict_without_queries())
    if not result.queries:
        yield head + "\n"
        return
    before, after = head.split('\n  "queries": [],\n', 1)
    # a query sits 4 spaces deep in the whole object; JSON strings hold no raw newline
    yield before + '\n  "queries": [\n'
    last = len(result.queries) - 1
    for i, q in enumerate(result.queries):
        yield ("    " + dumps(q.to_dict()).replace("\n", "\n    ")
               + (",\n" if i < last else "\n"))
    yield "  ],\n" + after + "\n"


def check_report_dir(path: Path, option: str = "--report") -> None:
    """Raise InputError unless ``path`` can take a report set: absent, or a directory that holds
    nothing but an earlier set (which is replaced whole). Run before the gate, so that a bad
    path stops the run before anything is recorded."""
    if path.exists() and not path.is_dir():
        raise InputError(source=path, expected="a directory", found="<a file>",
                         hint=f"{option} names the directory that receives "
                         f"{', '.join(REPORT_FILES)}")
    check_output_dir(path, option)
    if not path.exists():
        return
    other = sorted(p.name for p in path.iterdir() if p.name not in REPORT_FILES)
    if other:
        shown = ", ".join(other[:5]) + (", …" if len(other) > 5 else "")
        raise InputError(f"holds files that are not part of a report set ({shown}), and a new "
                         "set replaces the directory whole", source=path,
                         hint=f"give {option} a new directory, or one that holds only a "
                         "report set")


def check_report_file(path: Path, option: str = "--junit") -> None:
    """Raise InputError unless a report file can be written at ``path``."""
    check_output_file(path, option, example="gate.xml")


def write_report_set(result: GateResult, directory: str | Path, option: str = "--report"
                     ) -> list[Path]:
    """Write the report set into ``directory`` whole; returns the files' final paths."""
    from recallwatch._files import atomic_dir
    from recallwatch.report.html import to_html
    from recallwatch.report.junit import to_junit
    from recallwatch.report.markdown import to_markdown

    target = Path(directory)
    renderers = {"report.json": to_json, "report.md": to_markdown, "junit.xml": to_junit,
                 "report.html": to_html}
    try:
        with atomic_dir(target, lambda p: check_report_dir(p, option)) as tmp:
            for name in REPORT_FILES:
                # into the hidden directory, which atomic_dir syncs file by file and puts in
                # place whole: a file-by-file atomic write there would sync everything twice
                (tmp / name).write_bytes(renderers[name](result).encode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot write the report set: {exc.strerror or exc}",
                         source=target) from None
    return [target / name for name in REPORT_FILES]


def write_junit(result: GateResult, path: str | Path, option: str = "--junit") -> None:
    """Write the JUnit XML report alone (replacing ``path`` whole)."""
    from recallwatch._files import write_atomic
    from recallwatch.report.junit import to_junit

    target = Path(path)
    check_report_file(target, option)
    try:
        write_atomic(target, to_junit(result))
    except OSError as exc:
        raise InputError(f"cannot write the JUnit report: {exc.strerror or exc}",
                         source=target) from None
