"""A binary cache of parsed, validated runs: evaluating the same run file again skips its parse.

* **Where.** ``runs`` in recallwatch's user cache (:mod:`recallwatch._usercache`:
  ``$RECALLWATCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/recallwatch``, else ``~/.cache/recallwatch``),
  never beside the run. Created private to the user (mode 0700).
* **What.** One Arrow IPC file per run *content*, named by the sha256 of the file's bytes as
  stored: the query ids, document ids and scores, and what validation derived from them (query
  blocks, packed document ids). Loading memory-maps it: nothing is parsed or copied.
* **When.** Only files of at least ``MIN_BYTES`` (smaller ones parse in well under a second). An
  entry is written the *second* time the same file (path, inode, size, modification time) is read,
  so a one-off evaluation pays only a ``stat``; from the third time on, the parse is skipped.
* **Safe.** A hit is decided by content, not by name or date: the file is hashed and the entry of
  that hash is used, so an edited run (even one edited in place with its date kept) never meets
  an old entry. Entries are written to a temporary name, flushed, and renamed, so a reader sees a
  whole entry or none, and two writers of the same entry write the same bytes. An entry that fails
  to load (another format version, a damaged file) is removed and the run is parsed. The cache
  never makes an evaluation fail: any error in it is a miss. The oldest entries are removed once
  the cache holds more than ``$RECALLWATCH_CACHE_MAX_MB`` (default 4096).
* **Opt out.** ``RECALLWATCH_CACHE=0`` in the environment, or ``Run.from_trec(path, cache=False)``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from recallwatch._files import atomic_path, write_atomic
from recallwatch._hashing import canonical_hash
from recallwatch._usercache import user_cache
from recallwatch.formats.arrow import from_numpy, to_numpy
from recallwatch.metrics._keys import Blocks, DocKeys

__all__ = ["MIN_BYTES", "RunCache", "default_cache"]

R = TypeVar("R")


class CachedRun(Protocol):
    """What an entry is written from: a run (``recallwatch.metrics.Run``), named by its shape so
    that this module does not import the one that uses it."""

    @property
    def query_ids(self) -> pa.Array: ...
    @property
    def doc_ids(self) -> pa.Array: ...
    @property
    def scores(self) -> np.ndarray[Any, Any]: ...
    @property
    def preordered(self) -> bool: ...
    @property
    def doc_keys(self) -> DocKeys: ...
    @property
    def blocks(self) -> Blocks | None: ...
    def __len__(self) -> int: ...


# Rebuilds a run from an entry: Run._validated(query_ids, doc_ids, scores, source, *,
# preordered, blocks, doc_keys)
Build = Callable[..., R]

MIN_BYTES = 16 << 20
FORMAT = "recallwatch-run-cache/1"  # bump when what an entry holds, or how runs parse, changes


def default_cache(*, force: bool = False) -> RunCache | None:
    """The cache the environment configures; None when ``RECALLWATCH_CACHE`` turns it off (unless
    ``force``)."""
    root = user_cache("runs", force=force)
    if root is None:
        return None
    try:
        limit = int(os.environ.get("RECALLWATCH_CACHE_MAX_MB", "4096")) << 20
    except ValueError:
        limit = 4096 << 20
    return RunCache(root, max_bytes=limit, min_bytes=MIN_BYTES)


@dataclass(frozen=True)
class RunCache:
    root: Path
    max_bytes: int = 4096 << 20
    min_bytes: int = MIN_BYTES

    # -- the stat hint: which files were seen, and which content they held -----------------------
    def _hint_path(self, path: Path, info: os.stat_result) -> Path:
        key = [str(path.resolve()), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]
        return self.root / "seen" / canonical_hash(key)

    def lookup(self, path: Path, build: Build[R]) -> tuple[R | None, bool]:
        """(the cached run of ``path``, rebuilt by ``build``, or None; whether to store the parse
        of it).

        Never raises: a cache that cannot be read is a miss.
        """
        try:
            info = path.stat()
            if info.st_size < self.min_bytes or not path.is_file():
                return None, False
            hint = self._hint_path(path, info)
            recorded = hint.read_text(encoding="ascii").strip() if hint.exists() else None
            if recorded is None:  # first sight: remember it, parse as usual
                self._write_hint(hint, "seen")
                return None, False
            if recorded != "seen" and (self.root / f"{recorded}.arrow").exists():
                with path.open("rb") as f:
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
                if digest == recorded:
                    run = self._load(digest, str(path), build)
                    if run is not None:
                        return run, False
            return None, True
        except (OSError, ValueError):
            return None, False

    def _write_hint(self, hint: Path, value: str) -> None:
        self._mkdir()
        (self.root / "seen").mkdir(mode=0o700, exist_ok=True)
        write_atomic(hint, value)

    def _mkdir(self) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    # -- entries ---------------------------------------------------------------------------------
    def store(self, path: Path, sha256: str, run: CachedRun) -> None:
        """Write the entry of ``run`` (parsed from the bytes whose hash is ``sha256``); never
        raises."""
        try:
            info = path.stat()
            self._mkdir()
            target = self.root / f"{sha256}.arrow"
            if not target.exists():
                table = _to_table(run, sha256)
                with atomic_path(target) as tmp, pa.OSFile(str(tmp), "wb") as sink, \
                        pa.ipc.new_file(sink, table.schema) as writer:
                    writer.write_table(table)
            self._write_hint(self._hint_path(path, info), sha256)
            self._evict(keep=target)
        except (OSError, ValueError, pa.ArrowException):
            return

    def _load(self, sha256: str, source: str, build: Build[R]) -> R | None:
        entry = self.root / f"{sha256}.arrow"
        try:
            with pa.memory_map(str(entry)) as mapped:  # a mapping outlives its file object
                table = pa.ipc.open_file(mapped).read_all()
            run = _from_table(table, sha256, source, build)
        except (OSError, ValueError, KeyError, pa.ArrowException):
            entry.unlink(missing_ok=True)
            return None
        if run is not None:
            os.utime(entry)  # recently used: evicted last
        else:
            entry.unlink(missing_ok=True)
        return run

    def _evict(self, keep: Path) -> None:
        entries = []
        for p in self.root.glob("*.arrow"):
            if p.name.startswith("."):  # another writer's temporary file
                continue
            try:
                info = p.stat()
            except OSError:
                continue
            entries.append((info.st_mtime_ns, info.st_size, p))
        total = sum(size for _, size, _ in entries)
        for _, size, p in sorted(entries):
            if total <= self.max_bytes:
                break
            if p != keep:
                p.unlink(missing_ok=True)
                total -= size


def _to_table(run: CachedRun, sha256: str) -> pa.Table:
    columns: dict[str, Any] = {
        "qid": run.query_ids, "docid": run.doc_ids, "score": from_numpy(run.scores),
    }
    keys = run.doc_keys
    if keys.packed:
        for i, word in enumerate(keys.words):
            columns[f"key{i}"] = from_numpy(word)
    blocks = run.blocks
    if blocks is not None:
        start = np.zeros(len(run), dtype=np.uint8)
        start[blocks.starts[:-1]] = 1
        columns["block_start"] = from_numpy(start)
    meta = {"format": FORMAT, "sha256": sha256, "words": str(len(keys.words) if keys.packed else 0),
            "preordered": str(run.preordered)}
    table = pa.table(columns)
    return table.replace_schema_metadata(meta)


def _from_table(table: pa.Table, sha256: str, source: str, build: Build[R]) -> R | None:
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    if meta.get("format") != FORMAT or meta.get("sha256") != sha256:
        return None
    column = {name: _whole(table.column(name)) for name in table.column_names}
    words = int(meta["words"])
    keys = None
    if words:
        keys = DocKeys(tuple(to_numpy(column[f"key{i}"]) for i in range(words)), packed=True)
    blocks = None
    if "block_start" in column:
        starts = np.append(np.flatnonzero(to_numpy(column["block_start"])), len(table))
        blocks = Blocks(starts.astype(np.int64), column["qid"].take(from_numpy(starts[:-1])))
    run: R = build(column["qid"], column["docid"], to_numpy(column["score"]), source,
                   preordered=meta["preordered"] == "True", blocks=blocks, doc_keys=keys)
    return run


def _whole(column: pa.ChunkedArray) -> pa.Array:
    """The column as one array; the entry holds one record batch, so no copy."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
