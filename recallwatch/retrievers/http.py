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
  read from the environment only, and never written or printed. A ``user:password@`` in the URL
  is sent as HTTP Basic authentication (and never shown); better, ``http://USER@HOST/…`` with
  ``password_env``: the environment variable holding that user's password;
* ``redirects``: ``refuse`` (the default: a redirect is an error naming where it points) or
  ``same-host`` (followed when it stays on the service's host, and said in the gate's report). A
  redirect to another host is never followed: the credentials stay with the host they were
  given for (:mod:`recallwatch._http`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from recallwatch._http import (
    REDIRECTS,
    Call,
    Redirects,
    basic_auth,
    check_url,
    get_json,
    post_json,
    warm_up,
)
from recallwatch._redact import redact, remember
from recallwatch.errors import RetrieverError, UsageError
from recallwatch.retrievers.base import Hit, check_hits

__all__ = ["HttpRetriever", "open_http", "redirect_notes"]

_DEFAULT_TEMPLATE: dict[str, Any] = {"query": "{query}", "k": "{k}"}
_OPTIONS = {"method", "body", "params", "hits", "id", "score", "timeout", "retries", "backoff",
            "concurrency", "headers", "api_key_env", "api_key_header", "redirects",
            "password_env"}


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
    redirects: Redirects = "refuse"
    password_env: str | None = None  # the password of the URL's user (HTTP Basic)
    _followed: dict[str, None] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        headers = dict(self.headers)
        if self.api_key_env:
            secret = os.environ.get(self.api_key_env)
            if not secret:
                raise UsageError(f"retriever {self.name!r}: the environment variable "
                                 f"{self.api_key_env} (api_key_env) is not set")
            remember(secret)  # whatever its header is called, no message shows it
            headers[self.api_key_header] = (f"Bearer {secret}"
                                            if self.api_key_header == "Authorization" else secret)
        if self.password_env:
            password = os.environ.get(self.password_env)
            if not password:
                raise UsageError(f"retriever {self.name!r}: the environment variable "
                                 f"{self.password_env} (password_env) is not set")
            user = unquote(urlsplit(self.url).username or "")
            headers["Authorization"] = basic_auth(user, password)
        if len(queries) <= 1 or self.concurrency <= 1:
            return [self._one(q, k, headers) for q in queries]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(queries))) as pool:
            return list(pool.map(lambda q: self._one(q, k, headers), queries))

    def _one(self, query: str, k: int, headers: dict[str, str]) -> list[Hit]:
        shown = redact(self.url)
        what = f"query {query[:60]!r} (retriever {self.name!r})"
        request = fill(self.template, query, k)
        call = Call(RetrieverError, what, timeout=self.timeout, max_retries=self.retries,
                    retry_wait=self.backoff, redirects=self.redirects,
                    timeout_fix=f"if the service is only slow, raise the retriever's timeout: "
                    f"(seconds, now {self.timeout:g})",
                    redirect_fix="if you trust that URL, give it as the retriever's spec",
                    same_host_fix=" (or set redirects: same-host, which follows the redirects "
                    "that stay on the service's host)",
                    on_redirect=self._note)
        answer = (post_json(self.url, request, headers=headers, call=call)
                  if self.method == "POST" else get_json(self.url, request, headers=headers,
                                                         call=call))
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

    def _note(self, redirect: str) -> None:
        with self._lock:
            self._followed[redirect] = None

    def notes(self) -> list[str]:
        """What a report says about the searches so far: each redirect that was followed."""
        with self._lock:
            return [f"retriever {self.name!r}: {r}" for r in self._followed]

    def describe(self) -> dict[str, Any]:
        out = {"kind": "http", "url": redact(self.url), "method": self.method,
               "template": self.template, "hits": self.hits, "id": self.id_path,
               "score": self.score_path, "headers": sorted(self.headers),
               "api_key_env": self.api_key_env}
        # left out when unset: a config recorded before they existed keeps its hash
        if self.redirects != "refuse":
            out["redirects"] = self.redirects
        if self.password_env:
            out["password_env"] = self.password_env
        return out


def redirect_notes(retrievers: Iterable[object]) -> list[str]:
    """Each redirect the HTTP retrievers among ``retrievers`` followed (``redirects: same-host``):
    the answers came from another URL than the pipeline names, and a report says so."""
    return [note for r in retrievers if isinstance(r, HttpRetriever) for note in r.notes()]


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
    check_url(spec, f"retriever {name!r}: spec", password_fix=", or keep the password out of "
              "the URL: password_env: VAR beside spec: names an environment variable holding it")
    redirects = options.get("redirects", "refuse")
    if redirects not in REDIRECTS:
        raise UsageError(f"retriever {name!r}: redirects must be {' or '.join(REDIRECTS)}, "
                         f"found {redirects!r}")
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
    _check_credentials(spec, name, options, headers)
    numbers = _numbers(name, options)
    warm_up()  # the gate times each search: none is charged for loading the HTTP client
    return HttpRetriever(
        spec, name, method, dict(template),
        str(options.get("hits", "hits")), str(options.get("id", "id")),
        str(options.get("score", "score")), numbers["timeout"], int(numbers["retries"]),
        numbers["backoff"], int(numbers["concurrency"]),
        dict(headers),
        options.get("api_key_env"), str(options.get("api_key_header", "Authorization")),
        redirects, options.get("password_env"))


# (name, default, lowest, highest, whole number)
_NUMBERS = (("timeout", 10.0, 0.001, 3600.0, False), ("backoff", 0.5, 0.0, 600.0, False),
            ("retries", 3, 0, 100, True), ("concurrency", 4, 1, 256, True))


def _numbers(name: str, options: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, default, lo, hi, whole in _NUMBERS:
        value = options.get(key, default)
        number = not isinstance(value, bool) and isinstance(value, (int, float))
        if not number or not (lo <= value <= hi) or (whole and value != int(value)):
            kind = "a whole number" if whole else "a number"
            raise UsageError(f"retriever {name!r}: {key} must be {kind} from {lo:g} to {hi:g}, "
                             f"found {value!r}")
        out[key] = float(value)
    return out


def _check_credentials(spec: str, name: str, options: Mapping[str, Any],
                       headers: Mapping[str, str]) -> None:
    """At most one credential for the Authorization header; password_env with a user name."""
    parts = urlsplit(spec)
    password_env = options.get("password_env")
    if password_env is not None and (not isinstance(password_env, str) or not password_env):
        raise UsageError(f"retriever {name!r}: password_env must name an environment variable, "
                         f"found {password_env!r}")
    if password_env and (parts.username is None or parts.password is not None):
        raise UsageError(f"retriever {name!r}: password_env gives the password of the user "
                         "named in the URL: write spec: http://USER@HOST/… (the user name "
                         "alone, no password in the URL)")
    sources = [what for what, present in (
        ("a user name in the URL (HTTP Basic)", parts.username is not None),
        ("api_key_env", bool(options.get("api_key_env")) and str(
            options.get("api_key_header", "Authorization")).lower() == "authorization"),
        ("headers: Authorization", any(h.lower() == "authorization" for h in headers)),
    ) if present]
    if len(sources) > 1:
        raise UsageError(f"retriever {name!r}: {' and '.join(sources)} both set the "
                         "Authorization header; keep one")
