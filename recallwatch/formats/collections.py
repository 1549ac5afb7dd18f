"""Public test collections in one line, wherever a qrels, query or corpus file is taken.

* ``irds:DATASET_ID`` — a dataset of ``ir_datasets`` (``irds:cranfield``,
  ``irds:beir/scifact/test``), read from its home (``IR_DATASETS_HOME``, default
  ``~/.ir_datasets``) through the library (``pip install 'recallwatch[datasets]'``). A dataset
  not yet in the home is fetched by ``ir_datasets`` as it always does.
* ``beir:DIR`` or ``beir:DIR#SPLIT`` — a BEIR folder: ``corpus.jsonl`` (``{"_id", "title",
  "text"}``), ``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/SPLIT.tsv`` (``query-id
  corpus-id score`` after a header line); the split is ``test`` unless named.

Each gives its judgments (query id, document id, grade), its queries (id, text) and its
documents (id, title, text). :func:`golden_data` turns queries and judgments into a golden set
whose expected chunks are the documents judged relevant (grade >= 1), so that a corpus ingested
from the same collection (one chunk per document, id = document id) can be gated on it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from recallwatch.errors import InputError, NotInstalledError
from recallwatch.formats.structured import iter_jsonl, text_lines

__all__ = ["Beir", "Collection", "IrDatasets", "corpus_record", "golden_data", "is_collection",
           "open_collection"]

SCHEMES = ("irds:", "beir:")


class Collection(Protocol):
    @property
    def name(self) -> str:
        """The spec as given: irds:ID or beir:DIR[#split]."""
        ...

    def qrels(self) -> Iterator[tuple[str, str, int]]: ...

    def queries(self) -> Iterator[tuple[str, str]]: ...

    def docs(self) -> Iterator[tuple[str, str | None, str]]: ...


def is_collection(spec: object) -> bool:
    """Whether ``spec`` names a collection (``irds:…`` or ``beir:…``) rather than a file."""
    return isinstance(spec, str | Path) and str(spec).startswith(SCHEMES)


def open_collection(spec: str | Path) -> Collection:
    """The collection ``spec`` names; an InputError when it names none."""
    text = str(spec)
    if text.startswith("irds:"):
        return IrDatasets.open(text)
    if text.startswith("beir:"):
        return Beir.open(text)
    raise InputError(source=text, expected="irds:DATASET_ID or beir:DIR[#split]",
                     found=text)


@dataclass(frozen=True)
class IrDatasets:
    """A dataset of ``ir_datasets``, read through it."""

    name: str
    dataset: Any

    @classmethod
    def open(cls, spec: str) -> IrDatasets:
        try:
            import ir_datasets
        except ImportError:
            raise NotInstalledError("ir_datasets", "datasets") from None
        dataset_id = spec.removeprefix("irds:")
        if not dataset_id:
            raise InputError(source=spec, expected="irds:DATASET_ID, e.g. irds:cranfield",
                             found=spec)
        try:
            dataset = ir_datasets.load(dataset_id)
        except KeyError:
            from recallwatch._registry import suggest

            raise InputError(f"no ir_datasets dataset {dataset_id!r}"
                             f"{suggest(dataset_id, list(ir_datasets.registry))}",
                             source=spec, hint="the ids are listed at "
                             "https://ir-datasets.com") from None
        return cls(spec, dataset)

    def _read(self, what: str) -> Iterator[Any]:
        if not getattr(self.dataset, f"has_{what}")():
            raise InputError(f"the dataset has no {what}", source=self.name,
                             hint="choose a dataset id that provides them (a split's id, e.g. "
                             "irds:beir/scifact/test, has its queries and qrels)")
        try:
            yield from getattr(self.dataset, f"{what}_iter")()
        except (OSError, RuntimeError, ValueError) as exc:
            raise InputError(f"ir_datasets could not read its {what}: {exc}",
                             source=self.name, hint="check the dataset's files in "
                             "IR_DATASETS_HOME (default ~/.ir_datasets)") from None

    def qrels(self) -> Iterator[tuple[str, str, int]]:
        for q in self._read("qrels"):
            yield str(q.query_id), str(q.doc_id), int(q.relevance)

    def queries(self) -> Iterator[tuple[str, str]]:
        for q in self._read("queries"):
            text = q.default_text() if hasattr(q, "default_text") else q.text
            yield str(q.query_id), str(text)

    def docs(self) -> Iterator[tuple[str, str | None, str]]:
        for d in self._read("docs"):
            title = getattr(d, "title", None)
            yield str(d.doc_id), (str(title) if title else None), str(d.text)


@dataclass(frozen=True)
class Beir:
    """A BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

    name: str
    folder: Path
    split: str = "test"

    @classmethod
    def open(cls, spec: str) -> Beir:
        where, _, split = spec.removeprefix("beir:").partition("#")
        folder = Path(where)
        if not where or not folder.is_dir():
            raise InputError(source=spec, expected="beir:DIR, a folder holding corpus.jsonl, "
                             "queries.jsonl and qrels/<split>.tsv", found=where or "<no folder>")
        return cls(spec, folder, split or "test")

    def _file(self, name: str) -> Path:
        path = self.folder / name
        if not path.is_file():
            present = sorted(p.name for p in (self.folder / "qrels").glob("*.tsv")) \
                if name.startswith("qrels/") and (self.folder / "qrels").is_dir() else []
            hint = f"splits in this folder: {', '.join(p[:-4] for p in present)}" if present \
                else "a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv"
            raise InputError(source=self.name, expected=f"a file {path}", found="<none>",
                             hint=hint)
        return path

    def qrels(self) -> Iterator[tuple[str, str, int]]:
        path = self._file(f"qrels/{self.split}.tsv")
        for number, raw in text_lines(path):
            if not raw.strip():
                continue
            cols = next(csv.reader(io.StringIO(raw), delimiter="\t"))
            if number == 1 and cols[:1] == ["query-id"]:
                continue  # the header
            if len(cols) != 3:
                raise InputError(source=path, line=number, expected="query-id, corpus-id and "
                                 "score separated by tabs", found=raw)
            try:
                grade = int(cols[2])
            except ValueError:
                raise InputError(source=path, line=number, field="score",
                                 expected="an integer grade", found=cols[2]) from None
            yield cols[0], cols[1], grade

    def queries(self) -> Iterator[tuple[str, str]]:
        path = self._file("queries.jsonl")
        for obj in iter_jsonl(path):
            yield _text_field(obj, "_id", path), _text_field(obj, "text", path)

    def docs(self) -> Iterator[tuple[str, str | None, str]]:
        path = self._file("corpus.jsonl")
        for obj in iter_jsonl(path):
            title = obj.get("title")
            yield (_text_field(obj, "_id", path), title if isinstance(title, str) and title
                   else None, _text_field(obj, "text", path))


def _text_field(obj: dict[str, Any], key: str, path: Path) -> str:
    from recallwatch.formats.fields import line_of

    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # BEIR ids are sometimes written as numbers
    if not isinstance(value, str) or (key == "_id" and not value):
        raise InputError(source=path, line=line_of(obj), field=key, expected="a string",
                         found=value)
    return value


def golden_data(collection: Collection, top_k: int = 10) -> dict[str, Any]:
    """A golden set (as ``GoldenSet.from_dict`` reads it) from a collection: each query judged
    with at least one relevant document (grade >= 1) expects those documents; queries without
    one are left out (nothing could find them)."""
    relevant: dict[str, list[str]] = {}
    for qid, docid, grade in collection.qrels():
        if grade >= 1:
            relevant.setdefault(qid, []).append(docid)
    queries = [{"id": qid, "text": text, "expected": relevant[qid]}
               for qid, text in collection.queries() if qid in relevant]
    if not queries:
        raise InputError(source=collection.name, expected="queries with relevant documents",
                         found=0)
    return {"name": collection.name, "version": "1", "top_k": top_k, "queries": queries}


def corpus_record(doc_id: str, title: str | None, text: str) -> dict[str, Any]:
    """A document as a corpus record (one chunk per document; the title opens its text)."""
    return {"id": doc_id, "doc_id": doc_id, "text": f"{title}\n{text}" if title else text}
