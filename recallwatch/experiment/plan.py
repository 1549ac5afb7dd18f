"""An experiment plan: one golden set, one corpus, a base pipeline and the variants to try.

A plan (YAML) names ``golden``, ``corpus`` (one file, or a list whose later files replace the
chunks of earlier ones with the same id), an optional ``policy``, optional ``judgments`` (files of
judged (query, chunk) pairs, as ``gate --judgments`` reads them), a ``base: {name, …}`` and
``variants: [{name, …}]``. A base or a variant may set

* ``chunking: {method: sentences|size|paragraph, size, overlap}`` — re-chunk the corpus;
* ``embedder: SPEC`` — the model that embeds chunks and queries (dense retrieval);
* ``retrieval: dense | bm25 | {fuse: {method, k, norm, weights}}`` — the last is hybrid: dense
  and BM25 fused, with the fusion step of a pipeline file;
* ``rerank: {…}`` — a reranker, as in a pipeline file;
* ``index: {index_type, index_threshold, nprobes, ef, refine_factor}`` — the LanceDB index;
* ``corpus: FILE`` — a corpus variant (e.g. tables with written descriptions) whose chunks
  replace the base corpus's chunks with the same id;
* ``generator: SPEC`` and ``prompt: FILE`` — with the plan's ``answers:`` section, the generator
  that answers each question from the variant's retrieved chunks (as ``gate --generator``) and
  the prompt template of a chat endpoint generator (its ``prompt=FILE``).

An ``answers:`` section (``generator``, ``prompt``, ``judge``, ``labels``, ``min_kappa``,
``min_labelled``: the gate's ``--generator``, its ``prompt=FILE``, ``--answer-judge``,
``--answer-labels``, ``--answer-min-kappa`` and ``--answer-min-labelled``) has every variant's
answers judged; its ``generator`` and ``prompt`` are the base's unless the base sets its own.

A variant changes only what it names; everything else is the base's. Paths are relative to the
plan. Every mistake is an InputError naming the plan, the line, the variant and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from recallwatch.answers.trust import DEFAULT_MIN_KAPPA, DEFAULT_MIN_LABELLED
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.fields import check_keys, line_of, shown, text_id
from recallwatch.formats.structured import LINE_KEY, load_structured, without_lines
from recallwatch.ops.chunking import Chunking

__all__ = ["INDEX_KEYS", "AnswerSpec", "Plan", "VariantSpec", "load_plan"]

_TOP_KEYS = {"golden", "corpus", "policy", "judgments", "depth", "base", "variants", "answers"}
_VARIANT_KEYS = {"name", "chunking", "embedder", "retrieval", "rerank", "index", "corpus",
                 "generator", "prompt"}
_ANSWER_KEYS = {"generator", "prompt", "judge", "labels", "min_kappa", "min_labelled"}
_JUDGE = ("an answer judge, as gate --answer-judge takes it: offline, "
          "offline?support=X&relevance=Y&correct=Z, or an OpenAI-compatible chat endpoint "
          "http(s)://…/v1?model=NAME")
_GENERATOR = ("a generator spec, as gate --generator takes it: python:MODULE:ATTR or an "
              "OpenAI-compatible chat endpoint http(s)://…/v1?model=NAME")
#: LanceDB store settings a variant may set (the store URI's parameters).
INDEX_KEYS = ("index_type", "index_threshold", "nprobes", "ef", "refine_factor")
_BUILD_KEYS = ("index_type", "index_threshold")  # the rest only change how it is searched
DEFAULT_EMBEDDER = "use-multilingual"
_API_ONLY_EMBEDDERS = {"callable"}  # built from a Python function, never from a spec


@dataclass(frozen=True)
class VariantSpec:
    """One pipeline to try: what it is built from and how it retrieves."""

    name: str
    chunking: Chunking | None = None  # None: the corpus's own chunks
    embedder: str = DEFAULT_EMBEDDER
    retrieval: str = "dense"  # dense | bm25 | hybrid
    fuse: dict[str, Any] | None = None  # hybrid: the pipeline file's fuse mapping
    rerank: dict[str, Any] | None = None  # the pipeline file's rerank mapping
    index: dict[str, Any] = field(default_factory=dict)
    corpus: tuple[Path, ...] = ()  # corpus variant files, over the plan's corpus
    line: int | None = None
    generator: str | None = None  # with the plan's answers: section, as gate --generator
    prompt: Path | None = None  # a chat endpoint generator's prompt template

    @property
    def dense(self) -> bool:
        return self.retrieval in ("dense", "hybrid")

    @property
    def generator_spec(self) -> str | None:
        """The generator as ``gate --generator`` takes it, with the variant's prompt file."""
        if self.generator is None or self.prompt is None:
            return self.generator
        from recallwatch.answers.generate import with_prompt

        return with_prompt(self.generator, self.prompt)

    def build_index(self) -> dict[str, Any]:
        return {k: v for k, v in self.index.items() if k in _BUILD_KEYS}

    def config(self) -> dict[str, Any]:
        """What the variant is, as results.json records it (paths as written, no line)."""
        return {
            "chunking": None if self.chunking is None else self.chunking.describe(),
            "embedder": self.embedder if self.dense else None,
            "retrieval": self.retrieval,
            "fuse": self.fuse,
            "rerank": self.rerank,
            "index": dict(self.index) if self.dense else {},
            "corpus": [p.name for p in self.corpus],
            "generator": self.generator,
            "prompt": None if self.prompt is None else self.prompt.name,
        }


@dataclass(frozen=True)
class AnswerSpec:
    """The plan's ``answers:`` section: how every variant's answers are judged, as the gate's
    ``--answer-judge``, ``--answer-labels``, ``--answer-min-kappa`` and ``--answer-min-labelled``
    read them (the generator and its prompt are each variant's)."""

    labels: Path
    judge: str = "offline"
    min_kappa: float = DEFAULT_MIN_KAPPA
    min_labelled: int = DEFAULT_MIN_LABELLED
    line: int | None = None


@dataclass(frozen=True)
class Plan:
    source: Path
    golden: Path
    corpus: tuple[Path, ...]
    policy: Path | None
    base: VariantSpec
    variants: tuple[VariantSpec, ...]
    depth: int = 100
    # judgments files (as `gate --judgments` reads them): the (query, chunk) pairs someone judged
    judgments: tuple[Path, ...] = ()
    answers: AnswerSpec | None = None  # None: the variants' answers are not judged

    @property
    def base_dir(self) -> Path:
        return self.source.resolve().parent

    def all(self) -> tuple[VariantSpec, ...]:
        """The base first, then the variants in the plan's order."""
        return (self.base, *self.variants)


def load_plan(path: str | Path) -> Plan:
    """Read and check a plan; every error names the plan file, line, variant and field."""
    p = Path(path)
    data = load_structured(p)
    src = str(p)
    if not isinstance(data, dict):
        raise InputError(source=src, expected="a mapping with golden, corpus, base and variants",
                         found=shown(data))
    check_keys(data, _TOP_KEYS, source=src)
    line = line_of(data)
    base_dir = p.resolve().parent
    for key in ("golden", "corpus", "base"):
        if data.get(key) is None:
            raise InputError(source=src, line=line, field=key, expected="a value",
                             found=shown(None), hint="a plan needs golden, corpus and base")
    golden = _file(data["golden"], base_dir, src, line, None, "golden")
    corpus = _files(data["corpus"], base_dir, src, line, None, "corpus")
    policy = (None if data.get("policy") is None
              else _file(data["policy"], base_dir, src, line, None, "policy"))
    judgments = (() if data.get("judgments") is None
                 else _files(data["judgments"], base_dir, src, line, None, "judgments"))
    if judgments:
        from recallwatch.formats.judging import judged_pairs

        judged_pairs(judgments)  # a bad judgments file fails here, before anything is built
    depth = data.get("depth", 100)
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 10_000:
        raise InputError(source=src, line=line, field="depth",
                         expected="a whole number from 1 to 10000", found=depth)
    answers, defaults = (None, VariantSpec(name="")) if data.get("answers") is None else \
        _answers(data["answers"], base_dir, src, line)
    base = _variant(data["base"], defaults, base_dir, src, "base", answers is not None)
    raw_variants = data.get("variants") or []
    if not isinstance(raw_variants, list):
        raise InputError(source=src, line=line, field="variants",
                         expected="a list of variants, each {name, …}", found=shown(raw_variants))
    variants = []
    seen = {base.name: base.line}
    for i, raw in enumerate(raw_variants):
        v = _variant(raw, base, base_dir, src, f"variants[{i}]", answers is not None)
        if v.name in seen:
            raise InputError(source=src, line=v.line, record=v.name, field="name",
                             expected="a name no other variant has",
                             found=v.name, hint=f"the first is on line {seen[v.name]}")
        seen[v.name] = v.line
        variants.append(v)
    return Plan(p, golden, corpus, policy, base, tuple(variants), depth, judgments, answers)


def _answers(raw: Any, base_dir: Path, src: str, line: int | None
             ) -> tuple[AnswerSpec, VariantSpec]:
    """The ``answers:`` section, and the base's generator and prompt unless it sets its own."""
    if not isinstance(raw, dict):
        raise InputError(source=src, line=line, field="answers",
                         expected="a mapping {generator, prompt, judge, labels, min_kappa, "
                         "min_labelled}", found=shown(raw))
    check_keys(raw, _ANSWER_KEYS, source=src, record="answers")
    at = line_of(raw) or line
    if raw.get("labels") is None:
        raise InputError(source=src, line=at, record="answers", field="labels",
                         expected="a file of answers people labelled (as gate --answer-labels "
                         "reads it): the judge is measured against it before it judges",
                         found=shown(None))
    labels = _file(raw["labels"], base_dir, src, at, "answers", "labels")
    from recallwatch.formats.answers import read_labelled_answers

    read_labelled_answers(labels)  # a bad labels file fails here, before anything is built
    judge = raw.get("judge", "offline")
    if not isinstance(judge, str) or not judge.strip():
        raise InputError(source=src, line=at, record="answers", field="judge",
                         expected=_JUDGE, found=shown(judge))
    from recallwatch.answers.judges import check_judge

    try:
        check_judge(judge.strip())
    except UsageError as err:
        raise InputError(source=src, line=at, record="answers", field="judge", expected=_JUDGE,
                         found=judge, hint=str(err)) from None
    kappa = raw.get("min_kappa", DEFAULT_MIN_KAPPA)
    if isinstance(kappa, bool) or not isinstance(kappa, (int, float)) or not -1 <= kappa <= 1:
        raise InputError(source=src, line=at, record="answers", field="min_kappa",
                         expected="a kappa from -1 to 1 (as gate --answer-min-kappa)",
                         found=kappa)
    least = raw.get("min_labelled", DEFAULT_MIN_LABELLED)
    if isinstance(least, bool) or not isinstance(least, int) or least < 2:
        raise InputError(source=src, line=at, record="answers", field="min_labelled",
                         expected="a whole number >= 2 (as gate --answer-min-labelled)",
                         found=least)
    defaults = VariantSpec(name="")
    if "generator" in raw:
        defaults = replace(defaults, generator=_generator(raw["generator"], src, at, "answers"))
    if raw.get("prompt") is not None:
        defaults = replace(defaults, prompt=_prompt(raw["prompt"], base_dir, src, at, "answers"))
        _check_prompt(defaults, src, at, "answers")
    return AnswerSpec(labels, judge.strip(), float(kappa), least, at), defaults


def _generator(raw: Any, src: str, line: int | None, record: str) -> str:
    """A generator spec, checked as gate --generator checks it (nothing is imported yet)."""
    from recallwatch.answers.generate import check_generator

    if not isinstance(raw, str) or not raw.strip():
        raise InputError(source=src, line=line, record=record, field="generator",
                         expected=_GENERATOR, found=shown(raw))
    if not raw.strip().startswith(("python:", "http://", "https://")):
        raise InputError(source=src, line=line, record=record, field="generator",
                         expected=_GENERATOR, found=raw)
    try:
        check_generator(raw.strip())
    except UsageError as err:
        raise InputError(source=src, line=line, record=record, field="generator",
                         expected=_GENERATOR, found=raw, hint=str(err)) from None
    return raw.strip()


def _prompt(raw: Any, base_dir: Path, src: str, line: int | None, record: str) -> Path:
    """A prompt template file holding {question} and {contexts}, as a chat generator's
    ``prompt=FILE`` (relative to the plan)."""
    from recallwatch.answers.generate import read_prompt

    path = _file(raw, base_dir, src, line, record, "prompt")
    try:
        read_prompt(path)
    except InputError as err:
        raise InputError(source=src, line=line, record=record, field="prompt",
                         expected=err.expected,
                         found=f"<{str(err.found).strip('<>')} in {raw}>") from None
    return path


def _check_prompt(variant: VariantSpec, src: str, line: int | None, record: str) -> None:
    """A prompt template is a chat endpoint's: a python: generator builds its own prompt."""
    if variant.prompt is not None and variant.generator is not None \
            and variant.generator.startswith("python:"):
        raise InputError(source=src, line=line, record=record, field="prompt",
                         expected="a chat endpoint generator (http(s)://…/v1?model=NAME) to "
                         "send the prompt template to",
                         found=f"<the python: generator {variant.generator}>",
                         hint="a python: generator builds its own prompt from the question and "
                         "the contexts: drop prompt:, or set prompt: null on this variant")


def _answering(variant: VariantSpec, raw: dict[str, Any], src: str, answers: bool) -> None:
    """A variant's generator and prompt: only with the plan's answers: section, and then every
    variant has a generator."""
    named = [k for k in ("generator", "prompt") if k in raw]
    if named and not answers:
        raise InputError(f"a variant's {named[0]} is used only to judge its answers, and the "
                         "plan has no answers: section, which names the labelled answers and "
                         "the judge",
                         source=src, line=variant.line, record=variant.name, field=named[0],
                         hint=f"add answers: {{labels: FILE}} to the plan, or drop "
                         f"{named[0]}: from the variant; docs/experiments.md")
    if answers and variant.generator is None:
        raise InputError(source=src, line=variant.line, record=variant.name, field="generator",
                         expected="a generator for the variant's answers: generator: in the "
                         "plan's answers: section, on the base, or on this variant",
                         found=shown(None), hint=_GENERATOR)
    if "prompt" in raw or "generator" in raw:
        _check_prompt(variant, src, variant.line, variant.name)


def _variant(raw: Any, base: VariantSpec, base_dir: Path, src: str, where: str,
             answers: bool = False) -> VariantSpec:
    if not isinstance(raw, dict):
        raise InputError(source=src, record=where, expected="a mapping {name, …}",
                         found=shown(raw))
    line = line_of(raw)
    name = text_id(raw.get("name"))
    if name is None:
        raise InputError(source=src, line=line, record=where, field="name",
                         expected="a name for the variant", found=shown(raw.get("name")))
    check_keys(raw, _VARIANT_KEYS, source=src, record=name)
    changes: dict[str, Any] = {"name": name, "line": line}
    if "chunking" in raw:
        c = raw["chunking"]
        if c is None:
            changes["chunking"] = None
        elif not isinstance(c, dict):
            raise InputError(source=src, line=line, record=name, field="chunking",
                             expected="{method: sentences|size|paragraph, size, overlap}",
                             found=shown(c))
        else:
            changes["chunking"] = Chunking.from_mapping(c, source=src, record=name,
                                                        line=line_of(c) or line)
    if "embedder" in raw:
        e = raw["embedder"]
        if not isinstance(e, str) or not e.strip():
            raise InputError(source=src, line=line, record=name, field="embedder",
                             expected="an embedder spec, e.g. use-multilingual", found=shown(e))
        changes["embedder"] = _embedder(e.strip(), src, line, name)
    if "retrieval" in raw:
        changes.update(_retrieval(raw["retrieval"], src, line, name))
    if "rerank" in raw:
        r = raw["rerank"]
        if r is not None and not isinstance(r, dict):
            raise InputError(source=src, line=line, record=name, field="rerank",
                             expected="a mapping {python: MODULE:ATTR} or {cross_encoder: PATH}",
                             found=shown(r))
        changes["rerank"] = None if r is None else without_lines(r)
    if "index" in raw:
        changes["index"] = _index(raw["index"], src, line, name)
    if "corpus" in raw:
        changes["corpus"] = (() if raw["corpus"] is None
                             else _files(raw["corpus"], base_dir, src, line, name, "corpus"))
    if "generator" in raw:
        changes["generator"] = _generator(raw["generator"], src, line, name)
    if "prompt" in raw:
        changes["prompt"] = (None if raw["prompt"] is None
                             else _prompt(raw["prompt"], base_dir, src, line, name))
    variant = replace(base, **changes)
    if "retrieval" in raw or "rerank" in raw:
        _check_pipeline(variant, raw, src, base_dir)
    _answering(variant, raw, src, answers)
    return variant


def _check_pipeline(variant: VariantSpec, raw: dict[str, Any], src: str, base_dir: Path) -> None:
    """The fusion and reranker, checked as a pipeline file checks them (unknown method, missing
    weights…), with the plan's line numbers."""
    from recallwatch.retrievers.pipeline import PipelineSpec

    retrieval = raw.get("retrieval")
    fuse = retrieval.get("fuse") if isinstance(retrieval, dict) else variant.fuse
    names = {"dense": "dense", "bm25": "bm25", "hybrid": None}[variant.retrieval]
    retrievers = ({"dense": "lancedb://plan-check", "bm25": "bm25:plan-check"} if names is None
                  else {names: "bm25:plan-check"})
    data: dict[str, Any] = {"retrievers": retrievers, LINE_KEY: variant.line}
    if fuse is not None:
        data["fuse"] = fuse
    rerank = raw.get("rerank", variant.rerank)
    if rerank is not None:
        data["rerank"] = rerank
    PipelineSpec.from_mapping(data, source=src, base_dir=base_dir)


def _embedder(spec: str, src: str, line: int | None, name: str) -> str:
    """The spec, when it names a registered embedder (checked on every variant, also one that
    retrieves with BM25 alone, so that a typo is found before anything is built)."""
    from recallwatch._registry import suggest
    from recallwatch.embedders import EMBEDDERS, split_spec

    valid = [n for n in EMBEDDERS.names() if n not in _API_ONLY_EMBEDDERS]
    given = split_spec(spec)[0]
    if given not in valid:
        close = suggest(given, valid).strip()
        raise InputError(source=src, line=line, record=name, field="embedder",
                         expected=f"an embedder name: {', '.join(valid)} (options after '?', "
                         "e.g. sentence-transformers?path=DIR)", found=spec,
                         hint=f"{close + ' ' if close else ''}docs/embedders.md lists them")
    return spec


def _retrieval(raw: Any, src: str, line: int | None, name: str) -> dict[str, Any]:
    if raw in ("dense", "bm25"):
        return {"retrieval": raw, "fuse": None}
    if isinstance(raw, dict):
        check_keys(raw, {"fuse"}, source=src, record=name)
        fuse = raw.get("fuse")
        if isinstance(fuse, dict):
            return {"retrieval": "hybrid", "fuse": without_lines(fuse)}
    raise InputError(source=src, line=line_of(raw) or line, record=name, field="retrieval",
                     expected="dense, bm25 or {fuse: {method: rrf|combsum|combmnz|combmax|wsum, "
                     "…}} (dense and BM25 fused)", found=shown(raw))


def _index(raw: Any, src: str, line: int | None, name: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InputError(source=src, line=line, record=name, field="index",
                         expected=f"a mapping of {', '.join(INDEX_KEYS)}", found=shown(raw))
    check_keys(raw, set(INDEX_KEYS), source=src, record=name)
    out = {}
    for key, value in without_lines(raw).items():
        ok = (value in ("IVF_HNSW_SQ", "IVF_PQ") if key == "index_type"
              else isinstance(value, int) and not isinstance(value, bool) and value >= 1)
        if not ok:
            raise InputError(source=src, line=line_of(raw) or line, record=name,
                             field=f"index.{key}",
                             expected="IVF_HNSW_SQ or IVF_PQ" if key == "index_type"
                             else "a whole number >= 1", found=value)
        out[key] = value
    return out



def _file(raw: Any, base_dir: Path, src: str, line: int | None, record: str | None,
          fld: str) -> Path:
    if not isinstance(raw, str) or not raw.strip():
        raise InputError(source=src, line=line, record=record, field=fld,
                         expected="a file path (relative to the plan)", found=shown(raw))
    path = base_dir / raw
    if not path.is_file():
        raise InputError(source=src, line=line, record=record, field=fld,
                         expected="an existing file (paths are relative to the plan)",
                         found=raw, hint=f"no file at {path}")
    return path


def _files(raw: Any, base_dir: Path, src: str, line: int | None, record: str | None,
           fld: str) -> tuple[Path, ...]:
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise InputError(source=src, line=line, record=record, field=fld,
                         expected="a file or a list of files", found="[]")
    return tuple(_file(r, base_dir, src, line, record, fld) for r in items)
