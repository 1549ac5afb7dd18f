"""Probe sets: the queries the monitor and the reindex check the live index with.

A probe set is either **texts** (golden-set queries and/or a sample of logged queries, embedded
with the store's own embedder at monitor time) or **vectors** (a ``.npy`` matrix of query vectors,
for stores fed by another pipeline). Like a golden set it has a name, a version and a content
hash, recorded with every monitor run, so two runs are comparable only on the same probes.

Files read:

* ``*.npy`` — an ``(n, d)`` float matrix of query vectors;
* ``*.txt`` — logged queries, one per line (blank lines skipped);
* ``*.jsonl`` — logged queries, one JSON object per line with a ``text`` (or ``query``) field;
* ``*.json`` / ``*.yaml`` — a probe-set file written by :func:`write_probes`.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Generator, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.errors import InputError
from recallwatch.formats.golden import GoldenSet, canonical_hash

__all__ = [
    "ProbeSet", "build_probes", "iter_logged_queries", "load_probes", "read_logged_queries",
    "sample_logged_queries", "write_probes",
]


@dataclass(frozen=True)
class ProbeSet:
    name: str
    version: str
    texts: tuple[str, ...] = ()
    vectors: np.ndarray | None = None
    source: str = ""

    def __len__(self) -> int:
        return len(self.texts) if self.vectors is None else int(self.vectors.shape[0])

    @property
    def hash(self) -> str:
        if self.vectors is not None:
            from recallwatch.bench.exact_knn import content_hash

            return content_hash(np.ascontiguousarray(self.vectors, dtype=np.float32))
        return canonical_hash({"texts": list(self.texts)})

    def describe(self) -> dict[str, Any]:
        kind = "vectors" if self.vectors is not None else "texts"
        return {"name": self.name, "version": self.version, "hash": self.hash, "kind": kind,
                "size": len(self), "source": self.source}

    def to_dict(self) -> dict[str, Any]:
        if self.vectors is not None:
            raise InputError(field="probes", expected="a text probe set (vector probes are "
                             "stored as .npy)", found="<vectors>")
        return {"name": self.name, "version": self.version, "hash": self.hash,
                "probes": [{"text": t} for t in self.texts]}


def iter_logged_queries(path: str | Path) -> Generator[str, None, None]:
    """The query texts of a ``.txt`` (one per line) or ``.jsonl`` (``text``/``query`` field) log,
    read line by line: memory does not grow with the file."""
    from recallwatch.formats.structured import parse_json_line, text_lines

    p = Path(path)
    jsonl = p.suffix.lower() == ".jsonl"
    for n, line in text_lines(p):
        if not line.strip():
            continue
        if not jsonl:
            yield line.strip()
            continue
        obj = parse_json_line(line, p, n)
        text = obj.get("text", obj.get("query"))
        if not isinstance(text, str) or not text.strip():
            raise InputError(source=p, line=n, field="text",
                             expected="a non-empty string (or a 'query' field)", found=text)
        yield text.strip()


def read_logged_queries(path: str | Path) -> list[str]:
    """Every query text of a log (see :func:`iter_logged_queries`), in file order."""
    return list(iter_logged_queries(path))


def sample_logged_queries(path: str | Path, sample: int, *, seed: int = 0,
                          exclude: Iterable[str] = ()) -> list[str]:
    """The distinct logged queries that :func:`build_probes` draws with ``sample`` and ``seed``
    (the same ones, in the same order), read in two passes over the file so that memory holds
    a 16-byte digest per distinct query and the texts drawn, not the log."""
    if sample < 0:
        raise InputError(field="sample", expected="a non-negative integer", found=sample)
    skip = {_digest(t) for t in exclude}
    place: dict[bytes, int] = {}  # digest -> its place among the distinct queries
    for text in iter_logged_queries(path):
        key = _digest(text)
        if key not in skip and key not in place:
            place[key] = len(place)
    # random.sample reads only the population's length and the items at the places it draws
    drawn = set(random.Random(seed).sample(range(len(place)), min(sample, len(place))))
    wanted = {key for key, i in place.items() if i in drawn}
    del place
    out: dict[bytes, str] = {}
    for text in iter_logged_queries(path):
        key = _digest(text)
        if key in wanted and key not in out:
            out[key] = text
    return list(out.values())


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def build_probes(
    *, golden: GoldenSet | None = None, logged: Sequence[str] | Path = (),
    sample: int | None = None, seed: int = 0, name: str = "probes", version: str = "1",
) -> ProbeSet:
    """Golden queries plus up to ``sample`` logged queries drawn at random (seeded), duplicates
    removed, in a stable order (the order the drawn queries first appear in the log).

    ``logged`` is the logged texts, or the log file itself (a Path): then it is read line by line,
    twice when sampling (:func:`sample_logged_queries`), and the probes are the same."""
    texts = [q.text for q in golden.queries] if golden is not None else []
    golden_texts = set(texts)
    if isinstance(logged, Path):
        with closing(iter_logged_queries(logged)) as first:
            has_logged = next(first, None) is not None
    else:
        has_logged = bool(logged)
    if golden is None and not has_logged:
        raise InputError(field="probes", expected="a golden set and/or logged queries",
                         found="neither")
    if sample is not None and sample < 0:
        raise InputError(field="sample", expected="a non-negative integer", found=sample)
    if isinstance(logged, Path) and sample is not None:
        pool = sample_logged_queries(logged, sample, seed=seed, exclude=golden_texts)
    else:
        every = iter_logged_queries(logged) if isinstance(logged, Path) else logged
        pool = list(dict.fromkeys(t for t in every if t not in golden_texts))
        if sample is not None:
            drawn = random.Random(seed).sample(range(len(pool)), min(sample, len(pool)))
            pool = [pool[i] for i in sorted(drawn)]
    src = ", ".join(filter(None, [golden.source if golden else None,
                                  f"{len(pool)} logged queries (seed {seed})" if has_logged
                                  else ""]))
    return ProbeSet(name, version, tuple(dict.fromkeys([*texts, *pool])), source=src)


def write_probes(probes: ProbeSet, path: str | Path) -> None:
    from recallwatch._files import write_atomic

    write_atomic(Path(path), json.dumps(probes.to_dict(), ensure_ascii=False, indent=1) + "\n")


def load_probes(path: str | Path) -> ProbeSet:
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npy":
        try:
            arr = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(source=p, expected="a NumPy .npy matrix", found=str(exc)) from None
        if arr.ndim != 2 or arr.shape[0] == 0 or not np.issubdtype(arr.dtype, np.floating):
            raise InputError(source=p, expected="a non-empty 2-D float matrix (n, d)",
                             found=f"<{arr.dtype} array of shape {arr.shape}>")
        if not np.isfinite(arr).all():
            raise InputError(source=p, expected="finite values", found="<NaN or inf>")
        return ProbeSet(p.stem, "1", vectors=np.asarray(arr, dtype=np.float32), source=str(p))
    if suffix in (".txt", ".jsonl"):
        texts = read_logged_queries(p)
        if not texts:
            raise InputError(source=p, expected="at least one query", found="an empty file")
        return ProbeSet(p.stem, "1", tuple(texts), source=str(p))
    from recallwatch.formats.structured import load_structured

    data = load_structured(p)
    if not isinstance(data, dict) or not isinstance(data.get("probes"), list) or not data["probes"]:
        raise InputError(source=p, field="probes", expected="a probe-set file with a non-empty "
                         "'probes' list (or a .npy, .txt or .jsonl file)",
                         found=type(data).__name__)
    texts = []
    for n, item in enumerate(data["probes"]):
        text = item.get("text") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            raise InputError(source=p, record=str(n), field="text", expected="a non-empty string",
                             found=text)
        texts.append(text)
    probes = ProbeSet(str(data.get("name", p.stem)), str(data.get("version", "1")), tuple(texts),
                      source=str(p))
    if "hash" in data and data["hash"] != probes.hash:
        raise InputError(source=p, field="hash", expected=f"{probes.hash[:12]}… (the hash of the "
                         "probes listed: the file was edited by hand)", found=str(data["hash"]))
    return probes
