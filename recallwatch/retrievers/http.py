"""``http://…`` / ``https://…``: a search service as a retriever.

By default each query is ``POST``ed as JSON ``{"query": "…", "k": 10}`` and the answer is read as
``{"hits": [{"id": "…", "score": 0.9}, …]}`` in rank order. Options (in the pipeline file, beside
``spec:``) change both:

* ``method``: ``POST`` (a JSON body) or ``GET`` (a query string);
* ``body`` / ``params``: the request template; a value ``"{query}"`` or ``"{k}"`` is replaced by
  the query or the number of results wanted (inside a longer text too);
* ``hits``: where the list of hits is in the answer, as a dotted path (``data.results``; empty:
  the answer itself); ``id`` and ``score``: where each hit's chunk id and score are (dotted);
* ``timeout`` (seconds, default 10), ``retries`` (default 3; waits ``backoff`` seconds, default
  0.5, then twice as long each time), ``concurrency`` (requests at once, default 4);
* ``headers``; ``api_key_env``: the environment variable holding a credential, sent as
  ``Authorization: Bearer …`` (or in the header ``api_key_header`` names). The credential is
  read from the environment only, and never written or printed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch._redact import redact
from recallwatch.errors import RetrieverError, UsageError
from recallwatch.retrievers.base import Hit, check_hits

__all__ = ["HttpRetriever", "open_http"]

_DEFAULT_TEMPLATE: dict[str, Any] = {"query": "{query}", "k": "{k}"}
_OPTIONS = {"method", "body", "params", "hits", "id", "score", "timeout", "retries", "backoff",
            "concurrency", "headers", "api_key_env", "api_key_header"}


def fill(template: Any, query: str, k: int) -> Any:
    """The template with ``"{query}"`` and ``"{k}"`` replaced (a whole ``"{k}"`` by the number)."""
    if isinstance(template, str):
        if template == "{k}":
            return k
        if template == "{query}":
            return query
        return template.replace("{query}", query).replace("{k}", str(k))
    if isinstance(template, Mapping):
        return {key: fill(v, query, k) for key, v in template.items()}
    if isinstance(template, list):
        return [fill(v, query, k) for v in template]
    return template


def dig(value: Any, path: str) -> Any:
    """``value`` at a dotted path (``a.b.0.c``); raises KeyError naming the missing step."""
    for step in [p for p in path.split(".") if p]:
        if isinstance(value, Mapping) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            raise KeyError(step)
    return value


@dataclass
class HttpRetriever:
    url: str
    name: str = "http"
    method: str = "POST"
    template: dict[str, Any] = field(default_factory=lambda: dict(_DEFAULT_TEMPLATE))
    hits: str = "hits"
    id_path: str = "id"
    score_path: str = "score"
    timeout: float = 10.0
    retries: int = 3
    backoff: float = 0.5
    concurrency: int = 4
    headers: dict[str, str] = field(default_factory=dict)
    api_key_env: str | None = None
    api_key_header: str = "Authorization"

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        headers = dict(self.headers)
        if self.api_key_env:
            secret = os.environ.get(self.api_key_env)
            if not secret:
                raise UsageError(f"retriever {self.name!r}: the environment variable "
                                 f"{self.api_key_env} (api_key_env) is not set")
            headers[self.api_key_header] = (f"Bearer {secret}"
                                            if self.api_key_header == "Authorization" else secret)
        if len(queries) <= 1 or self.concurrency <= 1:
            return [self._one(q, k, headers) for q in queries]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(queries))) as pool:
            return list(pool.map(lambda q: self._one(q, k, headers), queries))

    def _one(self, query: str, k: int, headers: dict[str, str]) -> list[Hit]:
        from recallwatch._http import get_json, post_json

        shown = redact(self.url)
        what = f"query {query[:60]!r} (retriever {self.name!r})"
        request = fill(self.template, query, k)
        kwargs: dict[str, Any] = {"headers": headers, "error": RetrieverError, "what": what,
                                  "timeout": self.timeout, "max_retries": self.retries,
                                  "retry_wait": self.backoff}
        answer = (post_json(self.url, request, **kwargs) if self.method == "POST"
                  else get_json(self.url, request, **kwargs))
        where = f"{shown} (retriever {self.name!r})"
        try:
            items = dig(answer, self.hits)
        except KeyError as exc:
            raise RetrieverError(f"{where} answered {what} without {self.hits!r} (no "
                                 f"{exc.args[0]!r} in {_keys(answer)}): set the option hits to "
                                 "where the list of hits is") from None
        if not isinstance(items, list):
            raise RetrieverError(f"{where} answered {what}: {self.hits or 'the answer'} is "
                                 f"{type(items).__name__}, expected a list of hits")
        pairs = []
        for n, item in enumerate(items, 1):
            try:
                pairs.append((dig(item, self.id_path), dig(item, self.score_path)))
            except KeyError as exc:
                raise RetrieverError(f"{where} answered {what}: hit {n} has no "
                                     f"{exc.args[0]!r} (its keys: {_keys(item)}): set the options "
                                     "id and score to where the chunk id and score are") from None
        return check_hits(pairs, where=where, query=query, k=k)

    def describe(self) -> dict[str, Any]:
        return {"kind": "http", "url": redact(self.url), "method": self.method,
                "template": self.template, "hits": self.hits, "id": self.id_path,
                "score": self.score_path, "headers": sorted(self.headers),
                "api_key_env": self.api_key_env}


def _keys(value: Any) -> str:
    if isinstance(value, Mapping):
        return "keys " + (", ".join(map(str, list(value)[:10])) or "<none>")
    return f"a {type(value).__name__}"


def open_http(spec: str, *, name: str, base_dir: Path, embedder: str | None,
              options: dict[str, Any]) -> HttpRetriever:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise UsageError(f"retriever {name!r}: unknown option(s) {', '.join(unknown)}; "
                         f"valid: {', '.join(sorted(_OPTIONS))}")
    method = str(options.get("method", "POST")).upper()
    if method not in ("POST", "GET"):
        raise UsageError(f"retriever {name!r}: method must be POST or GET, found {method!r}")
    template = options.get("body" if method == "POST" else "params", _DEFAULT_TEMPLATE)
    if not isinstance(template, Mapping):
        raise UsageError(f"retriever {name!r}: {'body' if method == 'POST' else 'params'} must "
                         f"be a mapping, found {type(template).__name__}")
    headers = options.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise UsageError(f"retriever {name!r}: headers must be a mapping of texts")
    numbers: dict[str, float] = {}
    for key, default, lo in (("timeout", 10.0, 0.001), ("backoff", 0.5, 0.0),
                             ("retries", 3, 0), ("concurrency", 4, 1)):
        value = options.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < lo:
            raise UsageError(f"retriever {name!r}: {key} must be a number >= {lo}, "
                             f"found {value!r}")
        numbers[key] = value
    return HttpRetriever(
        spec, name, method, dict(template),
        str(options.get("hits", "hits")), str(options.get("id", "id")),
        str(options.get("score", "score")), float(numbers["timeout"]), int(numbers["retries"]),
        float(numbers["backoff"]), int(numbers["concurrency"]),
        dict(headers),
        options.get("api_key_env"), str(options.get("api_key_header", "Authorization")))
