"""An ingestion's two passes over its corpus, neither of which holds the corpus whole.

* **Pass 1** (:meth:`FileCorpus.scan`) reads the records one by one, validates each (and its
  precomputed vector), and keeps per accepted chunk only its id, content hash and line (enough
  to decide what is added, updated or unchanged) and what finds duplicate chunks (a digest and
  64 MinHash values: :mod:`recallwatch.formats.duplicates`).
* **Pass 2** (:meth:`FileCorpus.written`) reads the file again and gives the chunks to write,
  with their vectors when they are precomputed, checking on the way that every accepted record
  is still the one pass 1 saw; :class:`Groups` cuts them into commit groups and embedding
  batches as they come, exactly where cutting the whole list would.

A corpus that changes between the passes is an InputError naming it: pass 2 compares each
accepted record's id and hash with pass 1's, and :meth:`FileCorpus.check_unchanged` (called before
every commit) the files' sizes and modification times, so nothing read after a change is written.
A :class:`~recallwatch.formats.corpus.Corpus` already in memory goes through the same steps
(:class:`GivenCorpus`).
"""

from __future__ import annotations

import os
from array import array
from collections import deque
from collections.abc import Generator, Iterator, Mapping
from itertools import islice
from pathlib import Path

import numpy as np

from recallwatch.errors import InputError
from recallwatch.formats.corpus import (
    Corpus,
    Rejection,
    chunk_from_record,
    corpus_records,
    rejection,
    scan_corpus,
)
from recallwatch.formats.corpus_vectors import CorpusVectors
from recallwatch.formats.duplicates import DuplicateFinder
from recallwatch.records import Chunk

__all__ = ["FileCorpus", "GivenCorpus", "Groups", "ToWrite"]

ToWrite = tuple[Chunk, np.ndarray | None]  # a chunk to write and its precomputed vector


class GivenCorpus:
    """A corpus already in memory, with precomputed vectors by chunk id (or none)."""

    def __init__(self, data: Corpus, vectors: Mapping[str, np.ndarray] | None) -> None:
        self.data, self.given = data, vectors
        self.source = data.source
        self.ids = [c.id for c in data.chunks]
        self.hashes = [c.content_hash for c in data.chunks]
        self.rejected: list[Rejection] = list(data.rejected)
        self.duplicates = DuplicateFinder()

    def scan(self, *, strict: bool) -> None:
        """Nothing to read: the corpus was validated when it was made; its duplicates are
        looked for."""
        self.duplicates.extend(self.data.chunks)

    def written(self, write: bytearray) -> Generator[ToWrite, None, None]:
        for k, chunk in enumerate(self.data.chunks):
            if write[k]:
                yield chunk, None if self.given is None else self.given[chunk.id]

    def check_unchanged(self) -> None:
        """A corpus in memory cannot change under the ingestion."""


class FileCorpus:
    """A corpus file, read twice as a stream; its vectors from ``vectors`` (checked in pass 1),
    or ``given`` by chunk id, or none (they are embedded)."""

    def __init__(self, path: Path, *, vectors: CorpusVectors | None = None,
                 given: Mapping[str, np.ndarray] | None = None) -> None:
        self.path, self.vectors, self.given = path, vectors, given
        self.source = str(path)
        self.ids: list[str] = []  # of the accepted chunks, in file order
        self.hashes: list[str] = []
        self.lines = array("q")
        self.rejected: list[Rejection] = []
        # the accepted chunks' duplicates, found as pass 1 reads them (264 bytes a chunk)
        self.duplicates = DuplicateFinder()
        self._stamp: list[tuple[int, int] | None] = []

    def scan(self, *, strict: bool) -> None:
        """Pass 1: validate every record (``strict``: the first bad one raises), keep the
        accepted ones' ids, hashes and lines, and the rejections."""
        self._stamp = self._stamps()
        deferred: InputError | None = None
        for line, record, got in scan_corpus(self.path):
            if self.vectors is not None:
                self.vectors.see(line, record)
            if isinstance(got, Chunk):
                self.ids.append(got.id)
                self.hashes.append(got.content_hash)
                self.lines.append(line or 0)
                self.duplicates.add(got)
            elif not strict:
                self.rejected.append(rejection(self.path, line, record, got))
            elif self.vectors is None:
                raise got
            elif deferred is None:
                deferred = got  # every vector is checked first, as when they were read first
        if self.vectors is not None:
            self.vectors.finish()
            if self.vectors.in_field:
                del self._stamp[1:]  # the vectors are in the corpus: a .npy beside is not read
        if deferred is not None:
            raise deferred
        if not self.ids and not self.rejected:
            raise InputError(source=self.path, expected="at least one chunk",
                             found="<no records>")

    def written(self, write: bytearray) -> Generator[ToWrite, None, None]:
        """Pass 2: the accepted chunks whose ``write`` flag is set, in file order."""
        k, n, row = 0, len(self.ids), -1
        for line, record in corpus_records(self.path):
            at = line or 0
            if k < n and at > self.lines[k]:
                raise self._changed()  # an accepted record is gone
            if isinstance(record, InputError):
                if k < n and at == self.lines[k]:
                    raise self._changed()
                continue
            if isinstance(record.get("id"), str):
                row += 1  # the record's row in the .npy
            if k == n or at != self.lines[k]:
                continue  # rejected in pass 1
            try:
                chunk = chunk_from_record(record, source=self.path, line=line)
            except InputError:
                raise self._changed() from None
            if chunk.id != self.ids[k] or chunk.content_hash != self.hashes[k]:
                raise self._changed()
            if write[k]:
                yield chunk, self._vector(chunk, row, record)
            k += 1
        if k != n:
            raise self._changed()

    def check_unchanged(self) -> None:
        """Refuse to go on when the corpus (or its ``.npy``) was modified since pass 1."""
        if self._stamps()[:len(self._stamp)] != self._stamp:
            raise self._changed()

    def _vector(self, chunk: Chunk, row: int, record: dict[str, object]) -> np.ndarray | None:
        if self.vectors is not None:
            return self.vectors.vector(row, record)
        return None if self.given is None else self.given[chunk.id]

    def _stamps(self) -> list[tuple[int, int] | None]:
        paths = [self.path] + ([self.vectors.npy] if self.vectors is not None else [])
        return [_stamp(p) for p in paths]

    def _changed(self) -> InputError:
        return InputError("changed while it was being ingested; run the ingestion again (the "
                          "groups already committed are kept and skipped)", source=self.path)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class Groups:
    """The chunks to write, cut into commit groups of ``commit_every`` and each group into
    embedding batches of ``batch_size``, as they are read. A group waits in :meth:`take`'s queue
    from the moment its first batch is cut until the writer takes it: an embedder that reads
    ahead (Ray) holds the groups it has read, no more."""

    def __init__(self, items: Iterator[ToWrite], commit_every: int, batch_size: int) -> None:
        self._items, self.commit_every, self.batch_size = items, commit_every, batch_size
        self._pending: deque[list[ToWrite]] = deque()

    def take(self) -> list[ToWrite]:
        """The oldest group cut and not yet taken (the one the next vectors belong to)."""
        return self._pending.popleft()

    def batches(self) -> Iterator[list[ToWrite]]:
        while group := list(islice(self._items, self.commit_every)):
            self._pending.append(group)
            for b in range(0, len(group), self.batch_size):
                yield group[b:b + self.batch_size]

    def texts(self) -> Generator[list[str], None, None]:
        """Each batch's texts, to embed."""
        return ([chunk.text for chunk, _ in batch] for batch in self.batches())

    def given(self) -> Generator[np.ndarray, None, None]:
        """Each batch's precomputed vectors, as an embedder would give them."""
        return (np.stack([v for _, v in batch if v is not None]) for batch in self.batches())
