"""Every exception recallwatch raises, under one base class.

    RecallwatchError                  anything reported to a user (CLI exit code 2)
     ├── InputError (ValueError)      a bad file, record or value: where, expected, found
     │    └── DatasetError            the golden set names chunks the store does not hold
     ├── UsageError (ValueError)      options that contradict each other or unknown names
     ├── NotInstalledError            an optional extra is missing (ImportError; names the pip
     │                                command)
     ├── EmbedderMismatchError        an index is queried with another embedder than built it
     ├── EmbedderError                an embedding model or endpoint failed or gave bad vectors
     ├── StoreError                   a vector store failed or refused an operation
     ├── RetrieverError               a retriever (Python object, HTTP service, reranker) failed
     │                                or answered something that is not a ranked list
     ├── HistoryError                 the run history cannot be read or written
     ├── JudgeError                   an LLM judge endpoint failed or answered unusably
     ├── GeneratorError               an answer generator (Python function or chat endpoint)
     │                                failed or answered something that is not text
     └── Interrupted                  a run stopped before it completed (CLI exit code 130); the
                                      message says what was kept

The library raises these; only the CLI turns them into ``Error: …`` and an exit code.
"""

from __future__ import annotations

from os import PathLike

__all__ = [
    "DatasetError",
    "EmbedderError",
    "EmbedderMismatchError",
    "GeneratorError",
    "HistoryError",
    "InputError",
    "Interrupted",
    "JudgeError",
    "NotInstalledError",
    "RecallwatchError",
    "RetrieverError",
    "StoreError",
    "UsageError",
]


class RecallwatchError(Exception):
    """Base class of every error recallwatch raises on purpose."""


_SHOWN = 120  # longest record or found text shown in a message, in characters
_HEAD, _TAIL = 70, 20  # what a longer one keeps of its start and its end


def _shown(value: object, *, described: bool = False) -> str:
    """``value`` as a message shows it: a string quoted, unless ``described`` lets a ``<...>``
    description (not a value) stand bare. A text over 120 characters is cut in the middle, with
    its length, so that a whole offending line (even a decompressed 800 MB one) never floods a
    terminal or a CI log.
    """
    text = value if isinstance(value, str) else repr(value)
    bare = not isinstance(value, str) or (described and text[:1] == "<" and text[-1:] == ">")
    note = ""
    if len(text) > _SHOWN:
        text, note = f"{text[:_HEAD]}…{text[-_TAIL:]}", f" ({len(text):,} characters)"
    return (text if bare else repr(text)) + note


class InputError(RecallwatchError, ValueError):
    """Bad user input, located as precisely as it can be.

    ``str(err)`` reads ``FILE:LINE: record R: field F: expected E, found X (hint)``, leaving out the
    parts that are unknown. A record or found text over 120 characters is shown cut, with its
    length; the attributes keep it whole.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        source: str | PathLike[str] | None = None,
        line: int | None = None,
        record: str | None = None,
        field: str | None = None,
        expected: str | None = None,
        found: object = None,
        hint: str | None = None,
    ) -> None:
        self.source = None if source is None else str(source)
        self.line = line
        self.record = record
        self.field = field
        self.expected = expected
        self.found = found
        self.hint = hint
        where = self.source or ""
        if line is not None:
            where = f"{where}:{line}" if where else f"line {line}"
        parts = [where] if where else []
        if record is not None:
            parts.append(f"record {_shown(record)}")
        if field is not None:
            parts.append(f"field {field!r}")
        body = message or ""
        if expected is not None:
            detail = f"expected {expected}, found {_shown(found, described=True)}"
            body = f"{body}: {detail}" if body else detail
        if hint:
            body = f"{body} ({hint})"
        super().__init__(": ".join([*parts, body]) if parts else body)


class DatasetError(InputError):
    """The golden dataset is inconsistent with the store it is run against."""


class UsageError(RecallwatchError, ValueError):
    """Options that cannot work together, or a name that is not registered."""


class NotInstalledError(RecallwatchError, ImportError):
    """An optional dependency is missing."""

    def __init__(self, what: str, extra: str) -> None:
        self.extra = extra
        super().__init__(f"{what} is not installed: run pip install 'recallwatch[{extra}]'")


class EmbedderMismatchError(RecallwatchError):
    """The embedder at query time is not the one that built the index."""


class EmbedderError(RecallwatchError):
    """An embedding model or endpoint failed, or returned vectors of the wrong shape or value."""


class StoreError(RecallwatchError):
    """A vector store failed or refused an operation."""


class RetrieverError(RecallwatchError):
    """A retriever or reranker failed, timed out, or answered something unusable."""


class HistoryError(RecallwatchError):
    """The history store cannot be read or written."""


class JudgeError(RecallwatchError):
    """An LLM judge endpoint failed, or answered with something that is not a chat completion."""


class GeneratorError(RecallwatchError):
    """An answer generator (``gate --generator``) failed or answered something that is not an
    answer's text."""


class Interrupted(RecallwatchError):
    """A run was interrupted before it completed; the message says what it kept, if anything."""
