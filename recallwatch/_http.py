"""POST a JSON body (or GET a query string) and read a JSON answer, with retries: the standard
library only (urllib), so the extra-free install can talk to OpenAI-compatible endpoints and
search services.

Retries on connection failures and on 408/429/5xx answers, waiting ``retry_wait`` seconds before
the first retry and twice as long before each next one. Any other HTTP status fails at once with
the endpoint's own error message. The caller says which recallwatch error to raise.

An endpoint may echo the request's key in its error body ("Incorrect API key provided: sk-…"): the
value of every header whose name says it holds a secret (``Authorization``, ``api-key``…) is
taken out of every message (:func:`recallwatch._redact.scrub`), and so is any secret in the URL.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from recallwatch._files import FILE_CAP_VARIABLE, file_cap
from recallwatch._redact import is_secret_name, redact, remember, scrub
from recallwatch.errors import RecallwatchError

__all__ = ["RETRY_STATUS", "error_detail", "get_json", "post_json"]

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def post_json(
    url: str, body: dict[str, Any], *, headers: dict[str, str], error: type[RecallwatchError],
    what: str, timeout: float = 60.0, max_retries: int = 3, retry_wait: float = 0.5,
) -> Any:
    """The decoded JSON answer to ``POST url body``; ``error`` (naming ``what``) on failure."""
    for name, value in headers.items():
        if is_secret_name(name):
            remember(value)
            remember(value.rpartition(" ")[2])  # "Bearer KEY": the key alone too
    try:
        return _post(url, body, headers=headers, error=error, what=what, timeout=timeout,
                     max_retries=max_retries, retry_wait=retry_wait)
    except RecallwatchError as exc:
        message = scrub(str(exc))
        shown = redact(url)
        if message == str(exc) and shown == url:
            raise
        raise type(exc)(message.replace(url, shown)) from None


def _post(
    url: str, body: dict[str, Any], *, headers: dict[str, str], error: type[RecallwatchError],
    what: str, timeout: float, max_retries: int, retry_wait: float,
) -> Any:
    payload = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=payload, method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    return _send(request, url, error=error, what=what, timeout=timeout,
                 max_retries=max_retries, retry_wait=retry_wait)


def get_json(
    url: str, params: dict[str, Any], *, headers: dict[str, str], error: type[RecallwatchError],
    what: str, timeout: float = 60.0, max_retries: int = 3, retry_wait: float = 0.5,
) -> Any:
    """The decoded JSON answer to ``GET url?params``; ``error`` (naming ``what``) on failure."""
    import urllib.parse

    query = urllib.parse.urlencode({k: str(v) for k, v in params.items()})
    full = f"{url}{'&' if '?' in url else '?'}{query}" if query else url
    request = urllib.request.Request(full, method="GET", headers=headers)
    return _send(request, url, error=error, what=what, timeout=timeout,
                 max_retries=max_retries, retry_wait=retry_wait)


def _send(request: urllib.request.Request, url: str, *, error: type[RecallwatchError],
          what: str, timeout: float, max_retries: int, retry_wait: float) -> Any:
    for attempt in range(max_retries + 1):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read(file_cap() + 1)  # an endless answer is not read whole
                if len(raw) > file_cap():
                    raise error(f"{url} answered {what} with more than {file_cap():,} bytes; "
                                f"set {FILE_CAP_VARIABLE} (megabytes) to accept larger answers")
                return _decode(raw, url, what, error)
        except urllib.error.HTTPError as exc:
            with exc:  # the error holds the connection: closed here, not when collected
                detail = error_detail(exc.read(64 * 1024))
            if exc.code in RETRY_STATUS and attempt < max_retries:
                time.sleep(retry_wait * 2**attempt)
                continue
            raise error(f"{url} answered HTTP {exc.code} for {what}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if attempt < max_retries:
                time.sleep(retry_wait * 2**attempt)
                continue
            reason = getattr(exc, "reason", exc)
            raise error(f"cannot reach {url} after {max_retries + 1} attempts: {reason}") from None
    raise error(f"no request was made to {url} (max_retries={max_retries})")


def _decode(raw: bytes, url: str, what: str, error: type[RecallwatchError]) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise error(f"{url} answered {what} with a body that is not JSON: "
                    f"{raw[:120].decode('utf-8', 'replace')!r}") from None


def error_detail(body: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", "replace")[:200] or "<empty body>"
