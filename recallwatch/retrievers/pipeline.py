"""The pipeline file: named retrievers, an optional fusion step and reranker, the final K.

    retrievers:
      dense: lancedb://./kb?table=chunks     # a store, searched with the embedder that built it
      keyword: bm25:corpus.jsonl             # BM25 over the corpus
    depth: 100                               # how many results each retriever returns
    fuse: {method: rrf, k: 60}               # or combsum/combmnz/combmax/wsum, norm, weights
    rerank: {cross_encoder: ./models/ce}     # or python: MODULE:ATTR; optional
    top_k: 10                                # how many results the pipeline keeps at the end

A retriever is a spec string, or a mapping ``{spec: …, <options>}`` for the kinds that take
options (an HTTP service's request and response, a Python retriever's ``id_field``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch._progress import in_blocks
from recallwatch._redact import redact
from recallwatch._usercode import check_timeout
from recallwatch.errors import InputError, RecallwatchError, RetrieverError, UsageError
from recallwatch.formats.fields import check_keys, line_of, shown
from recallwatch.formats.structured import LINE_KEY, without_lines
from recallwatch.retrievers.base import Hit, Retriever, SupportsChunks
from recallwatch.retrievers.fusion import (
    METHODS,
    NORMS,
    SCORE_METHODS,
    check_method,
    check_weights,
    fuse,
)
from recallwatch.retrievers.rerank import Reranker, rerank_lists
from recallwatch.stores.base import SEARCH_BLOCK
from recallwatch.vectors import ties_as_measured

__all__ = ["FuseSpec", "Pipeline", "PipelineRun", "PipelineSpec", "RerankSpec", "load_pipeline",
           "single_retriever"]

MAX_DEPTH = 10_000
_KEYS = {"retrievers", "depth", "fuse", "rerank", "top_k"}
_FUSE_KEYS = {"method", "k", "norm", "weights"}
_RERANK_KEYS = {"python", "cross_encoder", "depth", "corpus", "batch_size", "timeout"}
# the settings an error may tell to change, and what --store says of them
_SETTINGS_NAMED = ("timeout", "redirects", "spec")
_STORE_HINT = "--store takes a retriever's spec alone, without settings"


@dataclass(frozen=True)
class FuseSpec:
    method: str = "rrf"
    k: int = 60  # rrf's constant
    norm: str | None = None  # None for rrf; min-max by default for the others
    weights: dict[str, float] | None = None  # wsum: one per retriever

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "k": self.k, "norm": self.norm, "weights": self.weights}


@dataclass(frozen=True)
class RerankSpec:
    python: str | None = None  # "python:MODULE:ATTR" (or "MODULE:ATTR")
    cross_encoder: Path | None = None  # a sentence-transformers CrossEncoder folder
    depth: int | None = None  # how many first-stage candidates are re-scored (default: all)
    corpus: Path | None = None  # chunk texts, when no retriever can give them
    batch_size: int = 32
    timeout: float | None = None  # seconds per call of a python reranker (None: the default)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "python": self.python,
            "cross_encoder": None if self.cross_encoder is None else str(self.cross_encoder),
            "depth": self.depth, "corpus": None if self.corpus is None else str(self.corpus),
            "batch_size": self.batch_size}
        if self.timeout is not None:  # only when set: a configuration's hash stays as it was
            out["timeout"] = self.timeout
        return out


@dataclass(frozen=True)
class PipelineSpec:
    retrievers: dict[str, str]  # name -> retriever spec
    depth: int = 100
    fuse: FuseSpec | None = None
    rerank: RerankSpec | None = None
    top_k: int | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> its options
    source: str = "<pipeline>"
    given_as: str = "pipeline"  # what gave it, in messages: a pipeline file, or --store

    def located(self, exc: RetrieverError) -> RetrieverError:
        """``exc`` prefixed with where the retriever was given (``pipeline FILE: ``, ``--store
        SPEC: ``). A retriever given to --store has no settings of its own: a message that
        names one to change (its ``timeout:``, ``redirects:``, its ``spec:``) also says how to
        set it, in a pipeline file holding that one retriever."""
        where = f"{self.given_as} {self.source}: "
        message = str(exc) if str(exc).startswith(where) else where + str(exc)
        if self.given_as == "--store" and _STORE_HINT not in message and any(
                f"{key}:" in message for key in _SETTINGS_NAMED):
            name, spec = next(iter(self.retrievers.items()))
            message += (f"; {_STORE_HINT}: write a pipeline file, retrievers: {{{name}: "
                        f"{{spec: '{redact(spec)}', SETTING: VALUE}}}}, and give it with "
                        "--pipeline instead")
        return exc if message == str(exc) else RetrieverError(message)

    def to_dict(self) -> dict[str, Any]:
        """The configuration, to record and hash (options redacted of secrets by the caller)."""
        return {"retrievers": dict(self.retrievers), "depth": self.depth,
                "fuse": None if self.fuse is None else self.fuse.to_dict(),
                "rerank": None if self.rerank is None else self.rerank.to_dict(),
                "top_k": self.top_k, "options": {n: dict(o) for n, o in self.options.items()}}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str,
                     base_dir: Path) -> PipelineSpec:
        if not isinstance(data, Mapping):
            raise InputError(source=source, expected="a mapping with retrievers:",
                             found=shown(data))
        check_keys(dict(data), _KEYS, source=source)
        line = line_of(data)
        retrievers, options = _retrievers(data.get("retrievers"), source, line_of(data))
        depth = _whole(data.get("depth", 100), source, line, "depth", 1, MAX_DEPTH)
        top_k = data.get("top_k")
        if top_k is not None:
            top_k = _whole(top_k, source, line, "top_k", 1, MAX_DEPTH)
            if top_k > depth:
                raise InputError(source=source, line=line, field="top_k",
                                 expected=f"at most depth ({depth})", found=top_k,
                                 hint="the final list is cut from the first stage's depth; "
                                 "raise depth or lower top_k")
        fuse_spec = _fuse(data.get("fuse"), list(retrievers), source, line)
        if fuse_spec is None and len(retrievers) > 1:
            raise InputError(source=source, line=line, field="fuse",
                             expected=f"a fusion step for {len(retrievers)} retrievers "
                             f"(method: {'|'.join(METHODS)})", found="<none>")
        rerank = _rerank(data.get("rerank"), source, base_dir, depth)
        return cls(retrievers, depth, fuse_spec, rerank, top_k, options, source)


def load_pipeline(path: Path) -> PipelineSpec:
    """Read and check a pipeline file (YAML or JSON); errors name the file, line and field."""
    from recallwatch.formats.structured import load_structured

    p = Path(path)
    return PipelineSpec.from_mapping(load_structured(p), source=str(p),
                                     base_dir=p.resolve().parent)


def single_retriever(spec: str) -> PipelineSpec:
    """A retriever spec given where a store URI is (``--store python:my_search:search``): the
    pipeline of that one retriever, named after its kind (``python``, ``bm25``, ``http``), as a
    pipeline file holding only it would be; relative paths are read from the working folder."""
    from recallwatch.retrievers import scheme_of

    one = PipelineSpec.from_mapping({"retrievers": {scheme_of(spec): spec}},
                                    source=redact(spec), base_dir=Path.cwd())
    return dataclasses.replace(one, given_as="--store")


def _whole(value: Any, source: str, line: int | None, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InputError(source=source, line=line, field=name,
                         expected=f"a whole number from {lo} to {hi}", found=shown(value))
    return value


def _retrievers(raw: Any, source: str, line: int | None
                ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    if not isinstance(raw, Mapping) or not [k for k in raw if k != LINE_KEY]:
        raise InputError(source=source, line=line_of(raw) or line, field="retrievers",
                         expected="a mapping {name: retriever spec} with at least one entry",
                         found=shown(raw))
    specs: dict[str, str] = {}
    options: dict[str, dict[str, Any]] = {}
    for name, value in raw.items():
        if name == LINE_KEY:
            continue
        at = line_of(value) or line_of(raw) or line
        if name in ("fused", "final") or not str(name).strip():
            raise InputError(source=source, line=at, field=f"retrievers.{name}",
                             expected="a name other than 'fused' and 'final' (run file names)",
                             found=name)
        if isinstance(value, Mapping):
            spec = value.get("spec")
            opts = {k: without_lines(v) for k, v in value.items() if k not in ("spec", LINE_KEY)}
            if opts:
                options[str(name)] = opts
        else:
            spec = value
        if not isinstance(spec, str) or ":" not in spec:
            raise InputError(source=source, line=at, field=f"retrievers.{name}",
                             expected="a retriever spec (a store URI, bm25:CORPUS, "
                             "python:MODULE:ATTR, http(s)://…) or {spec: …, options}",
                             found=shown(spec))
        if "timeout" in options.get(str(name), {}):
            check_timeout(options[str(name)]["timeout"], field=f"retrievers.{name}.timeout",
                          source=source, line=at)
        specs[str(name)] = spec
    return specs, options



def _fuse(raw: Any, names: list[str], source: str, line: int | None) -> FuseSpec | None:
    if raw is None:
        return None
    at = line_of(raw) or line
    if isinstance(raw, str):
        raw = {"method": raw}
    if not isinstance(raw, Mapping):
        raise InputError(source=source, line=at, field="fuse",
                         expected="a mapping {method, k, norm, weights}", found=shown(raw))
    check_keys(dict(raw), _FUSE_KEYS, source=source, record="fuse")
    method = raw.get("method")
    norm = raw.get("norm", "min-max" if method in SCORE_METHODS else None)
    try:
        if not isinstance(method, str):
            raise UsageError(f"expected a method ({', '.join(METHODS)})")
        if norm is not None and not isinstance(norm, str):
            raise UsageError(f"expected a normalisation ({', '.join(NORMS)})")
        check_method(method, norm)
        weights = None
        if method == "wsum" or raw.get("weights") is not None:
            w = raw.get("weights")
            if w is not None and not isinstance(w, Mapping):
                raise UsageError("weights must be a mapping {retriever name: number}")
            given = {str(n): v for n, v in (w or {}).items() if n != LINE_KEY}
            if method != "wsum":
                raise UsageError(f"weights apply to wsum only, not to {method}")
            weights = dict(zip(names, check_weights(given, names)))
    except UsageError as exc:
        field = "fuse.weights" if raw.get("weights") is not None else "fuse"
        raise InputError(str(exc), source=source, line=line_of(raw.get("weights")) or at,
                         field=field) from None
    k = _whole(raw.get("k", 60), source, at, "fuse.k", 0, 1_000_000)
    return FuseSpec(method, k, norm, weights)


def _rerank(raw: Any, source: str, base_dir: Path, depth: int) -> RerankSpec | None:
    if raw is None:
        return None
    at = line_of(raw)
    if not isinstance(raw, Mapping):
        raise InputError(source=source, field="rerank",
                         expected="a mapping {python: MODULE:ATTR} or {cross_encoder: PATH}",
                         found=shown(raw))
    check_keys(dict(raw), _RERANK_KEYS, source=source, record="rerank")
    py, ce = raw.get("python"), raw.get("cross_encoder")
    if (py is None) == (ce is None):
        raise InputError(source=source, line=at, field="rerank",
                         expected="exactly one of python: MODULE:ATTR or cross_encoder: PATH",
                         found=shown({k: v for k, v in raw.items() if k != LINE_KEY}))
    for key, value in (("python", py), ("cross_encoder", ce), ("corpus", raw.get("corpus"))):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InputError(source=source, line=at, field=f"rerank.{key}",
                             expected="a non-empty string", found=shown(value))
    rdepth = raw.get("depth")
    if rdepth is not None:
        rdepth = _whole(rdepth, source, at, "rerank.depth", 1, depth)
    timeout = raw.get("timeout")
    if timeout is not None:
        if py is None:
            raise InputError(source=source, line=at, field="rerank.timeout",
                             expected="no timeout for a cross_encoder (it bounds the calls "
                             "into a python: reranker's code)", found=timeout)
        timeout = check_timeout(timeout, field="rerank.timeout", source=source, line=at)
    corpus = raw.get("corpus")
    return RerankSpec(
        python=None if py is None else (py if py.startswith("python:") else f"python:{py}"),
        cross_encoder=None if ce is None else base_dir / ce,
        depth=rdepth, corpus=None if corpus is None else base_dir / corpus,
        batch_size=_whole(raw.get("batch_size", 32), source, at, "rerank.batch_size", 1, 4096),
        timeout=timeout)


@dataclass
class PipelineRun:
    per_retriever: dict[str, list[list[Hit]]]  # each at `depth`
    fused: list[list[Hit]]  # = the single retriever's lists when no fuse
    final: list[list[Hit]]  # after the reranker (= fused without one), cut to the final K


@dataclass
class Pipeline:
    spec: PipelineSpec
    retrievers: dict[str, Retriever]
    reranker: Reranker | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    _texts: dict[str, str] = field(default_factory=dict, init=False)

    @classmethod
    def from_spec(cls, spec: PipelineSpec, *, base_dir: Path,
                  embedder: str | None = None) -> Pipeline:
        """Open every retriever (and the reranker); on a failure, close what was opened."""
        from recallwatch.retrievers import open_retriever

        opened: dict[str, Retriever] = {}
        try:
            for name, rspec in spec.retrievers.items():
                opened[name] = open_retriever(rspec, name=name, base_dir=base_dir,
                                              embedder=embedder, options=spec.options.get(name))
            reranker = _open_reranker(spec.rerank, base_dir)
        except BaseException as exc:
            for r in opened.values():
                _close(r)
            if isinstance(exc, RetrieverError) and spec.given_as == "--store":
                raise spec.located(exc) from None  # said with the --store it was given to
            raise
        return cls(spec, opened, reranker, base_dir)

    def search(self, queries: Sequence[str], k: int) -> PipelineRun:
        """:meth:`search_block` over ``SEARCH_BLOCK`` queries at a time (a progress bar on a
        terminal counts them), the lists joined."""
        n = len(queries)
        if not n:
            return self.search_block(queries, k)
        parts = in_blocks(n, SEARCH_BLOCK, f"searching the pipeline {self.spec.source} "
                          f"({n:,} queries)", lambda a, b: [self.search_block(queries[a:b], k)])
        return PipelineRun({name: [h for p in parts for h in p.per_retriever[name]]
                            for name in parts[0].per_retriever},
                           [h for p in parts for h in p.fused], [h for p in parts for h in p.final])

    def search_block(self, queries: Sequence[str], k: int) -> PipelineRun:
        """Each retriever at ``depth``, fused, reranked, and cut to ``min(k, top_k)``.

        Where the order among exactly tied scores is the pipeline's own (a store's or BM25's
        list, a fusion, a reranking), ties are ordered as the measures order them (id
        descending, :func:`recallwatch.vectors.measured_tie_order`) before any cut, so the run
        files written from these lists evaluate to the gate's numbers (fusion and reranking
        order them so themselves). One ``python:`` or ``http:`` retriever's list is the user's
        system's order and is kept as it answered."""
        depth = self.spec.depth
        try:
            per = {name: [hits[:depth] for hits in r.search(list(queries), depth)]
                   for name, r in self.retrievers.items()}
        except RetrieverError as exc:  # the file that names the retriever, and its settings
            located = self.spec.located(exc)
            if located is exc:
                raise
            raise located from None
        for name, lists in per.items():
            if len(lists) != len(queries):
                raise RetrieverError(f"retriever {name!r} answered {len(lists)} lists for "
                                     f"{len(queries)} queries")
        f = self.spec.fuse
        if f is None:
            fused = next(iter(per.values()))
            if self._orders_ties():
                fused = [ties_as_measured(hits) for hits in fused]
        else:
            fused = [hits[:depth] for hits in
                     fuse(per, method=f.method, norm=f.norm, k=f.k, weights=f.weights)]
        final = fused
        if self.reranker is not None:
            n = (self.spec.rerank.depth if self.spec.rerank is not None else None) or depth
            candidates = [hits[:n] for hits in fused]
            texts = self.texts([cid for hits in candidates for cid, _ in hits])
            final = rerank_lists(self.reranker, queries, candidates, texts)
        keep = min(k, self.spec.top_k) if self.spec.top_k else k
        return PipelineRun(per, fused, [hits[:keep] for hits in final])

    def _orders_ties(self) -> bool:
        """Whether the one retriever's order among tied scores is recallwatch's (a store's or
        BM25's), not the user's code's or service's."""
        from recallwatch.retrievers.bm25 import BM25Retriever
        from recallwatch.retrievers.store import StoreRetriever

        return all(isinstance(r, (StoreRetriever, BM25Retriever))
                   for r in self.retrievers.values())

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The text of every chunk id: from the rerank corpus, else any retriever holding chunks
        (a store, a BM25 corpus). A chunk none of them holds is a RetrieverError."""
        wanted = [c for c in dict.fromkeys(ids) if c not in self._texts]
        if wanted and self.spec.rerank is not None and self.spec.rerank.corpus is not None \
                and not self._texts:
            from recallwatch.formats.corpus import read_corpus

            self._texts.update({c.id: c.text for c in read_corpus(self.spec.rerank.corpus)})
            wanted = [c for c in wanted if c not in self._texts]
        for r in self.retrievers.values():
            if not wanted:
                break
            if isinstance(r, SupportsChunks):
                self._texts.update({c: ch.text for c, ch in r.chunks(wanted).items()})
                wanted = [c for c in wanted if c not in self._texts]
        if wanted:
            raise RetrieverError(
                f"the reranker needs the text of {len(wanted)} chunk(s) no retriever holds: "
                f"{', '.join(wanted[:5])}{' …' if len(wanted) > 5 else ''}",
            ) from None
        return {c: self._texts[c] for c in ids}

    def describe(self) -> dict[str, Any]:
        from recallwatch._redact import redact_all

        out: dict[str, Any] = redact_all(self.spec.to_dict())
        out["retrievers"] = {n: r.describe() for n, r in self.retrievers.items()}
        if self.reranker is not None:
            out["reranker"] = self.reranker.describe()
        return out

    def close(self) -> None:
        for r in self.retrievers.values():
            _close(r)
        _close(self.reranker)

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close(r: object) -> None:
    close = getattr(r, "close", None)
    if callable(close):
        with contextlib.suppress(RecallwatchError):
            close()


def _open_reranker(spec: RerankSpec | None, base_dir: Path) -> Reranker | None:
    if spec is None:
        return None
    if spec.cross_encoder is not None:
        from recallwatch.retrievers.rerank import CrossEncoderReranker

        return CrossEncoderReranker(spec.cross_encoder, spec.batch_size)
    from recallwatch.retrievers.python import DEFAULT_TIMEOUT, load_attribute, user_code
    from recallwatch.retrievers.rerank import CallableReranker

    assert spec.python is not None
    guard = user_code(f"reranker {spec.python}", "its scores",
                      DEFAULT_TIMEOUT if spec.timeout is None else spec.timeout,
                      f"rerank: {{python: {spec.python.removeprefix('python:')}, "
                      "timeout: SECONDS}")
    fn = load_attribute(spec.python, base_dir=base_dir, what="rerank", guard=guard)
    if not callable(fn):
        raise UsageError(f"rerank: {spec.python} is a {type(fn).__name__}, not a function "
                         "f(query, [(id, text), …]) -> [score, …]")
    return CallableReranker(fn, spec.python, guard=guard)
