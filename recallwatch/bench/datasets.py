"""Where benchmark vectors come from: the chapter's synthetic collection, vector files, an
ANN-Benchmarks HDF5 file, a store's own vectors, or a corpus embedded with any embedder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.bench.engines.base import SEED
from recallwatch.bench.exact_knn import content_hash
from recallwatch.errors import InputError, StoreError
from recallwatch.formats.ann import AnnDataset, Metric, parse_metric, read_hdf5, read_vectors
from recallwatch.formats.fields import bounded, check_keys, line_of, shown
from recallwatch.formats.structured import without_lines
from recallwatch.vectors import normalise

if TYPE_CHECKING:
    from recallwatch.stores.base import VectorStore

__all__ = [
    "Dataset",
    "check_spec",
    "dataset_from_spec",
    "embed_corpus",
    "export_vectors",
    "hold_out",
    "synthetic",
    "topic_collection",
]


@dataclass(frozen=True)
class Dataset:
    """Base vectors, queries, the metric, and where they came from (recorded with results)."""

    name: str
    base: np.ndarray
    queries: np.ndarray
    metric: Metric
    ids: list[str] | None = None  # names of the base rows (store and corpus datasets)
    source: dict[str, Any] = field(default_factory=dict)
    neighbors: np.ndarray | None = None  # exact neighbours shipped with the data, if any

    @cached_property
    def hash(self) -> str:
        """sha256 of base, queries and metric: the identity of the data behind every figure."""
        return content_hash(self.base, self.queries, extra=f"metric={self.metric}")

    def describe(self) -> str:
        return (f"{self.name}: n={self.base.shape[0]}, d={self.base.shape[1]}, "
                f"{self.queries.shape[0]} queries, metric {self.metric}")


def topic_collection(
    centres: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """n points around randomly chosen topic centres (unit noise), normalised (listing 18.12)."""
    topic = rng.integers(0, centres.shape[0], n)
    return normalise(centres[topic] + rng.standard_normal((n, centres.shape[1])))


def synthetic(
    n: int, dim: int, *, topics: int = 40, queries: int = 1000, seed: int = 0
) -> Dataset:
    """The chapter's collection: topic centres ``N(0, 9)``, points = centre + ``N(0, 1)``,
    normalised; the queries are fresh points of the same topics. Cosine / inner product."""
    for name, value in (("n", n), ("dim", dim), ("topics", topics), ("queries", queries)):
        if value < 1:
            raise InputError(field=name, expected="a positive integer", found=value)
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim)) * 3
    base = topic_collection(centres, n, rng)
    test = topic_collection(centres, queries, rng)
    spec = {"synthetic": {"n": n, "dim": dim, "topics": topics, "queries": queries, "seed": seed}}
    return Dataset(f"synthetic-{n}x{dim}", base, test, "ip", source=spec)


def hold_out(
    vectors: np.ndarray, count: int, seed: int = 0, ids: Sequence[str] | None = None
) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
    """Split ``count`` random rows off as queries: (base, queries, ids of the base rows)."""
    if not 1 <= count < vectors.shape[0]:
        raise InputError(field="queries.sample", expected=f"1 ≤ sample < {vectors.shape[0]} "
                         "(the number of vectors)", found=count)
    rng = np.random.default_rng(seed)
    picked = np.zeros(vectors.shape[0], dtype=bool)
    picked[rng.choice(vectors.shape[0], count, replace=False)] = True
    keep = np.flatnonzero(~picked)
    kept_ids = None if ids is None else [ids[int(i)] for i in keep]
    return (np.ascontiguousarray(vectors[keep], dtype=np.float32),
            np.ascontiguousarray(vectors[picked], dtype=np.float32), kept_ids)


def export_vectors(
    store: VectorStore, *, dim: int | None = None, block: int = 4096
) -> tuple[list[str], np.ndarray]:
    """Every chunk id of a store and its vector, through the VectorStore protocol.

    An adapter that declares :class:`~recallwatch.stores.base.SupportsVectors` is asked
    directly. Otherwise each vector
    is read back through ``score_of`` with the d basis vectors as queries: for a store that
    scores by inner product this returns the stored components (for cosine, the normalised
    vector), so it needs ``dim`` and is slow on large stores.
    """
    ids = [c.id for c in store.chunks()]
    if not ids:
        raise StoreError(f"store {store.uri} holds no chunks to export")
    from recallwatch.stores.base import SupportsVectors

    if isinstance(store, SupportsVectors):
        return ids, np.asarray(store.vectors(ids), dtype=np.float32)
    if dim is None:
        raise InputError(field="dim", expected="the vector dimension (this store has no "
                         "vectors() method, so vectors are read back through score_of)",
                         found=None)
    out = np.empty((len(ids), dim), dtype=np.float32)
    basis = np.eye(dim, dtype=np.float32)
    for start in range(0, len(ids), block):
        part = ids[start:start + block]
        scores = store.score_of(basis, [part] * dim)
        for j, row in enumerate(scores):
            missing = [i for i in part if i not in row]
            if missing:
                raise StoreError(f"store {store.uri} gave no score for chunk {missing[0]!r}")
            out[start:start + len(part), j] = [row[i] for i in part]
    return ids, out


def embed_corpus(
    path: str | Path, embedder: str | None = None, **options: Any
) -> tuple[list[str], np.ndarray]:
    """Chunk ids and document vectors of a corpus file, embedded with a registered embedder."""
    from recallwatch.embedders import DEFAULT_EMBEDDER, get_embedder
    from recallwatch.formats.corpus import read_corpus

    corpus = read_corpus(path)
    model = get_embedder(embedder or DEFAULT_EMBEDDER, **options)
    vectors = np.asarray(model.embed_documents([c.text for c in corpus.chunks]), dtype=np.float32)
    return [c.id for c in corpus.chunks], vectors


_FORMS = ("synthetic", "hdf5", "base", "store", "corpus")
_SPEC_KEYS = {*_FORMS, "metric", "queries", "dim", "embedder"}
_SYNTHETIC = {"n": 10_000, "dim": 128, "topics": 40, "queries": 1000, "seed": 0}
# Generation holds (n + queries) × dim float64 values at once: 500 million is 4 GB.
MAX_SYNTHETIC_VALUES = 500_000_000
MAX_DIM = 65_536
MAX_ROWS = 10_000_000


def check_spec(spec: Any, *, source: str = "", line: int | None = None) -> None:
    """Every key, type and range of a ``dataset:`` section, before any data is read or made:
    numbers reach numpy and faiss allocations."""
    if not isinstance(spec, Mapping):
        raise InputError(source=source, line=line, field="dataset", expected="a mapping",
                         found=shown(spec))
    line = line_of(spec) or line
    check_keys(dict(spec), _SPEC_KEYS, source=source, record="dataset")
    forms = [f for f in _FORMS if f in spec]
    if len(forms) != 1:
        raise InputError(source=source, line=line, field="dataset",
                         expected=f"exactly one of {', '.join(_FORMS)}", found=forms or "<none>")
    form = forms[0]

    def number(where: Mapping[str, Any], key: str, lo: int, hi: int, name: str) -> None:
        if key in where:
            bounded(where[key], lo, hi, source=source, line=line_of(where) or line, field=name)

    def path(key: str) -> None:
        value = spec.get(key)
        if not isinstance(value, str) or not value.strip():
            raise InputError(source=source, line=line, field=f"dataset.{key}",
                             expected="a file path (or URI) as text", found=shown(value))

    if form == "synthetic":
        syn = {} if spec["synthetic"] is None else spec["synthetic"]  # `synthetic:` alone
        if not isinstance(syn, Mapping):
            raise InputError(source=source, line=line, field="dataset.synthetic",
                             expected="a mapping", found=shown(syn))
        check_keys(dict(syn), set(_SYNTHETIC), source=source, record="dataset.synthetic")
        for key, hi in (("n", MAX_ROWS), ("dim", MAX_DIM), ("topics", 100_000),
                        ("queries", 1_000_000)):
            number(syn, key, 1, hi, f"dataset.synthetic.{key}")
        number(syn, "seed", *SEED, "dataset.synthetic.seed")
        values = {**_SYNTHETIC, **syn}
        if (values["n"] + values["queries"]) * values["dim"] > MAX_SYNTHETIC_VALUES:
            raise InputError(source=source, line=line_of(syn) or line, field="dataset.synthetic",
                             expected=f"(n + queries) × dim at most {MAX_SYNTHETIC_VALUES:,}",
                             found=(values["n"] + values["queries"]) * values["dim"])
    else:
        path(form)
    number(spec, "dim", 1, MAX_DIM, "dataset.dim")
    if "metric" in spec:
        try:
            parse_metric(spec["metric"], source=source, field="dataset.metric")
        except InputError as exc:  # the same message, with the line
            raise InputError(source=source, line=line, field="dataset.metric",
                             expected=exc.expected, found=shown(exc.found)) from None
    if spec.get("embedder") is not None:
        path("embedder")
    queries = spec.get("queries")
    if isinstance(queries, Mapping):
        check_keys(dict(queries), {"sample", "seed"}, source=source, record="dataset.queries")
        number(queries, "sample", 1, MAX_ROWS, "dataset.queries.sample")
        number(queries, "seed", *SEED, "dataset.queries.seed")
    elif queries is not None:
        path("queries")


def dataset_from_spec(spec: Mapping[str, Any], *, source: str = "", base_dir: Path | None = None
                      ) -> Dataset:
    """The dataset a sweep file's ``dataset:`` section describes. Forms (one of):

    - ``synthetic: {n, dim, topics, queries, seed}``
    - ``hdf5: FILE`` (ANN-Benchmarks; its ``distance`` attribute gives the metric)
    - ``base: FILE`` with ``queries: FILE`` or ``queries: {sample: N, seed: S}`` (held out)
    - ``store: URI`` (its own vectors; ``dim`` when the adapter has no ``vectors()``; the metric
      defaults to cosine, the stores' own; sampled queries are held out of the base, and the
      ``store`` engine searches past them)
    - ``corpus: FILE`` with ``embedder: NAME`` (documents embedded here)

    ``metric`` (ip, l2, cosine) may be given for every form but hdf5 (default ip; cosine for a
    store).
    """
    check_spec(spec, source=source)
    root = base_dir or Path(".")
    form = next(f for f in _FORMS if f in spec)
    # a store scores by cosine (the VectorStore contract): its truth must too, unless told
    metric = parse_metric(spec.get("metric", "cosine" if form == "store" else "ip"),
                          source=source, field="dataset.metric")
    if form == "synthetic":
        syn = {**_SYNTHETIC, **without_lines(spec["synthetic"] or {})}  # checked: a mapping or None
        data = synthetic(syn["n"], syn["dim"], topics=syn["topics"], queries=syn["queries"],
                         seed=syn["seed"])
        return Dataset(data.name, data.base, data.queries, metric, source=data.source)
    if form == "hdf5":
        path = root / str(spec["hdf5"])
        ann: AnnDataset = read_hdf5(path)
        return Dataset(path.stem, ann.train, ann.test, ann.metric,
                       source={"hdf5": str(path)}, neighbors=ann.neighbors)
    ids: list[str] | None = None
    if form == "base":
        path = root / str(spec["base"])
        vectors = np.asarray(read_vectors(path), dtype=np.float32)
        name = path.stem
    elif form == "store":
        from recallwatch.stores import open_store

        store = open_store(str(spec["store"]))
        try:
            ids, vectors = export_vectors(store, dim=spec.get("dim"))
            name = store.uri
        finally:
            store.close()
    else:
        path = root / str(spec["corpus"])
        ids, vectors = embed_corpus(path, spec.get("embedder"))
        name = path.stem
    queries = spec.get("queries", {"sample": 1000})
    if isinstance(queries, Mapping):
        base, test, ids = hold_out(vectors, queries.get("sample", 1000), queries.get("seed", 0),
                                   ids)
    else:
        base = np.ascontiguousarray(vectors, dtype=np.float32)
        test = np.ascontiguousarray(read_vectors(root / str(queries)), dtype=np.float32)
    # a store URI may carry a password: only its redacted form is recorded with results
    recorded = name if form == "store" else str(spec[form])
    return Dataset(name, base, test, metric, ids,
                   {form: recorded, "queries": without_lines(queries)})

