"""Every HTTP request recallwatch makes (search services, OpenAI-compatible endpoints, webhooks)
goes through here, over httpx (imported when the first request is made, so ``import
recallwatch`` and ``recallwatch --help`` stay light).

* **Redirects:** none is followed unless the caller asks (``redirects="same-host"``): a 3xx
  answer is an error that names where it points and how to use that URL. Asked, a redirect is
  followed only to the same host (same scheme and port, or from http to https on that host), at
  most 5 in a row, and the caller is told each time (``on_redirect``) so that its report says
  so. A redirect to another host is never followed: what was given for a host (its credentials
  above all) goes to that host alone.
* **Credentials:** ``user:password@`` in a URL is sent as HTTP Basic authentication to that host
  and never shown; the value of every header whose name says it holds a secret
  (``Authorization``, ``api-key``…) is remembered and taken out of every message
  (:func:`recallwatch._redact.scrub`), and so is any secret in the URL, so an endpoint that
  echoes the key in its error body ("Incorrect API key provided: sk-…") does not get it shown.
* **Timeouts:** ``timeout`` seconds to connect, to send and for the first byte of the answer, and
  the whole answer must arrive within ``timeout`` seconds of its first byte (an answer that
  trickles does not hold a command for ever). A timeout names the setting to raise
  (``timeout_fix``).
* **Retries:** on connection failures, timeouts and 408/429/5xx answers, waiting ``retry_wait``
  seconds before the first retry and twice as long before each next one. Any other status fails
  at once with the endpoint's own error message. The caller says which recallwatch error to raise.
* **Bounds:** an answer is read up to :func:`recallwatch._files.file_cap` bytes, an error body up
  to 64 kB; one client per process, at most 32 connections open at once (the connections are
  reused between requests).
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlencode, urlsplit

from recallwatch._files import FILE_CAP_VARIABLE, file_cap
from recallwatch._redact import ENCODE_HINT, is_secret_name, password_span, redact, remember, scrub
from recallwatch.errors import RecallwatchError, UsageError

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_CONNECTIONS", "MAX_REDIRECTS", "REDIRECTS", "RETRY_STATUS", "Call", "Redirects",
           "basic_auth", "check_url", "error_detail", "get_json", "post_json", "post_status",
           "warm_up"]

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
Redirects = Literal["refuse", "same-host"]
REDIRECTS: tuple[Redirects, ...] = ("refuse", "same-host")
MAX_REDIRECTS = 5
MAX_CONNECTIONS = 32
ERROR_BODY = 64 * 1024  # of an error answer, only the start is read: it is shown, not used
_SHOWN = 200  # longest URL from an answer (a Location) shown in a message


@dataclass(frozen=True)
class Call:
    """How a request is made and how its failures read.

    ``what`` names the request in messages ("query 'x' (retriever 'api')"); ``timeout_fix`` says
    how to wait longer; ``redirect_fix`` what to do about a redirect that is not followed, and
    ``same_host_fix`` how to follow it when it stays on the host; ``on_redirect`` is told (in
    words) about every redirect that is followed."""

    error: type[RecallwatchError]
    what: str
    timeout: float = 60.0
    max_retries: int = 3
    retry_wait: float = 0.5
    redirects: Redirects = "refuse"
    timeout_fix: str = "if the endpoint is only slow, raise the timeout"
    redirect_fix: str = "use the URL it points to instead"
    same_host_fix: str = ""  # said of a refused redirect that stays on the host: how to allow it
    on_redirect: Callable[[str], None] | None = None


def check_url(url: str, name: str, *, password_fix: str = "") -> None:
    """Refuse, before any work, a URL that cannot be sent to: ``name`` says which setting holds
    it (``--webhook``, ``retriever 'api': spec``). A password in it is remembered (never shown);
    one with a character that ends the user-and-password part early is refused with how to write
    it (``password_fix``: where else the password can be kept)."""
    span = password_span(url)
    if span is not None:
        remember(url[span[0]:span[1]])
    bad = f"{name} must be an http:// or https:// URL with a host name, found {redact(url)!r}"
    try:
        parts = urlsplit(url)
        if span is not None and parts.password != url[span[0]:span[1]]:
            raise UsageError(f"{name}: the password in {redact(url)!r} holds a character that "
                             "ends the user-and-password part early: "
                             f"{ENCODE_HINT.partition(', or')[0]}{password_fix}")
        port = parts.port  # out of range or not a number: ValueError
        host = parts.hostname
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(f"{bad} ({exc})") from None
    if parts.scheme not in ("http", "https") or not host or port == 0:
        raise UsageError(bad)


def basic_auth(user: str, password: str) -> str:
    """The ``Authorization`` header value of HTTP Basic authentication (remembered as a
    secret)."""
    import base64

    remember(password)
    value = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    remember(value)
    return f"Basic {value}"


def post_json(url: str, body: Mapping[str, Any], *, headers: Mapping[str, str],
              call: Call) -> Any:
    """The decoded JSON answer to ``POST url`` with ``body`` as JSON."""
    payload = json.dumps(body).encode("utf-8")
    raw = _exchange("POST", url, payload,
                    {"Content-Type": "application/json", **headers}, call)[1]
    return _decode(raw, url, call)


def get_json(url: str, params: Mapping[str, Any], *, headers: Mapping[str, str],
             call: Call) -> Any:
    """The decoded JSON answer to ``GET url?params`` (added to a query the URL already has)."""
    query = urlencode({k: str(v) for k, v in params.items()})
    full = f"{url}{'&' if '?' in url else '?'}{query}" if query else url
    return _decode(_exchange("GET", full, None, dict(headers), call, shown_url=url)[1], url, call)


def post_status(url: str, content: bytes, *, headers: Mapping[str, str], call: Call) -> int:
    """``POST url`` with ``content``; the HTTP status of a successful answer (its body unread
    beyond the cap). A webhook answers with anything, JSON or not."""
    return _exchange("POST", url, content, dict(headers), call)[0]


# -- one exchange: credentials, retries, redirects, bounded reading -------------------------------


def _exchange(method: str, url: str, content: bytes | None, headers: dict[str, str], call: Call,
              *, shown_url: str | None = None) -> tuple[int, bytes]:
    """(status, body) of a 2xx answer, after the retries and the redirects allowed; ``call.error``
    otherwise, its message free of every secret."""
    shown = redact(shown_url or url)
    try:
        target, headers = _credentials(url, headers, call, shown)
        return _retried(method, target, content, headers, call, shown)
    except RecallwatchError as exc:
        message = scrub(str(exc))
        if message == str(exc):
            raise
        raise type(exc)(message) from None


def _credentials(url: str, headers: dict[str, str], call: Call,
                 shown: str) -> tuple[httpx.URL, dict[str, str]]:
    """The URL without its ``user:password@`` (sent as a Basic header instead), and the headers;
    every secret remembered so that no message shows it."""
    import httpx

    for name, value in headers.items():
        if is_secret_name(name):
            remember(value)
            remember(value.rpartition(" ")[2])  # "Bearer KEY": the key alone too
    try:
        target = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise call.error(f"{shown} is not a URL recallwatch can send to: {exc}") from None
    if target.scheme not in ("http", "https") or not target.host:
        raise call.error(f"{shown} is not an http:// or https:// URL with a host name")
    if target.username or target.password:
        remember(target.password)
        if not any(n.lower() == "authorization" for n in headers):
            headers = {**headers, "Authorization": basic_auth(target.username, target.password)}
        target = target.copy_with(username=None, password=None)
    for name, value in headers.items():
        if not value.isascii():
            raise call.error(f"the header {name} for {shown} holds a character that is not ASCII; "
                             "an HTTP header can only carry ASCII")
    return target, headers


def _retried(method: str, url: httpx.URL, content: bytes | None, headers: dict[str, str],
             call: Call, shown: str) -> tuple[int, bytes]:
    import httpx

    attempts = call.max_retries + 1
    failure = "no request was made"
    for attempt in range(attempts):
        if attempt:
            time.sleep(call.retry_wait * 2 ** (attempt - 1))
        try:
            status, raw = _follow(method, url, content, headers, call, shown)
        except httpx.TimeoutException:
            failure = (f"timed out (no answer within {call.timeout:g} s), for {call.what}; "
                       f"{call.timeout_fix}")
            continue
        except httpx.TransportError as exc:
            failure = f"{_reason(exc)}, for {call.what}"
            continue
        if 200 <= status < 300:
            return status, raw
        if status in RETRY_STATUS and attempt + 1 < attempts:
            continue
        raise call.error(f"{shown} answered HTTP {status} for {call.what}: {error_detail(raw)}")
    plural = "attempt" if attempts == 1 else "attempts"
    raise call.error(f"cannot reach {shown} after {attempts} {plural}: {failure}")


def _reason(exc: Exception) -> str:
    """Why a connection failed, in the words of the system ("[Errno 111] Connection refused")."""
    text = str(exc) or type(exc).__name__
    return text.strip()


def _follow(method: str, url: httpx.URL, content: bytes | None, headers: dict[str, str],
            call: Call, shown: str) -> tuple[int, bytes]:
    """One attempt: the request, and the redirects the call allows (each one checked first)."""
    import httpx

    client = _client()
    timeout = httpx.Timeout(call.timeout, pool=None)  # waiting for a free connection is no fault
    for _ in range(MAX_REDIRECTS + 1):
        with client.stream(method, url, content=content, headers=headers,
                           timeout=timeout) as answer:
            status = answer.status_code
            location = answer.headers.get("Location")
            if status not in REDIRECT_STATUS or not location:
                cap = file_cap() if 200 <= status < 300 else ERROR_BODY
                return status, _read(answer, cap, call, shown)
        try:
            target = url.join(location).copy_with(username=None, password=None)
        except httpx.InvalidURL:
            raise call.error(f"{shown} answered HTTP {status} for {call.what}: a redirect to "
                             f"{_cut(location)!r}, which is not a URL") from None
        _allow_redirect(url, target, status, call, shown)
        if call.on_redirect is not None:
            call.on_redirect(f"{redact(str(url))} answered HTTP {status}, a redirect to "
                             f"{_cut(redact(str(target)))}: followed (redirects: same-host)")
        if status == 303 or (status in (301, 302) and method == "POST"):
            method, content = "GET", None  # as browsers and httpx do
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        url = target
    raise call.error(f"{shown} answered {call.what} with more than {MAX_REDIRECTS} redirects in "
                     "a row; use the URL they end at")


def _allow_redirect(source: httpx.URL, target: httpx.URL, status: int, call: Call,
                    shown: str) -> None:
    """Refuse the redirect unless the call allows it and it stays on the same host."""
    head = (f"{shown} answered HTTP {status} for {call.what}: a redirect to "
            f"{_cut(redact(str(target)))}")
    same = _same_host(source, target)
    if call.redirects == "refuse":
        raise call.error(f"{head}, not followed (recallwatch follows a redirect only when "
                         f"asked); {call.redirect_fix}{call.same_host_fix if same else ''}")
    if not same:
        raise call.error(f"{head}, away from {_origin(source)}, never followed: what is sent to "
                         f"a host, credentials included, goes to that host alone; "
                         f"{call.redirect_fix}")


def _origin(url: httpx.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"


def _same_host(a: httpx.URL, b: httpx.URL) -> bool:
    """Same host name and the same scheme and port, or http:80 to https:443 on that host."""
    if a.host != b.host:
        return False
    ports = {"http": 80, "https": 443}
    pa, pb = a.port or ports[a.scheme], b.port or ports.get(b.scheme, 0)
    return (a.scheme, pa) == (b.scheme, pb) or (a.scheme, pa, b.scheme, pb) == (
        "http", 80, "https", 443)


def _read(answer: httpx.Response, cap: int, call: Call, shown: str) -> bytes:
    """The body, at most ``cap`` bytes of it (an error answer is cut there, a 2xx answer over it
    refused), within ``call.timeout`` seconds of its first byte."""
    import httpx

    deadline = time.monotonic() + call.timeout
    chunks: list[bytes] = []
    size = 0
    for chunk in answer.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            if answer.is_success:  # an endless answer is not read whole
                raise call.error(f"{shown} answered {call.what} with more than {cap:,} bytes; "
                                 f"set {FILE_CAP_VARIABLE} (megabytes) to accept larger answers")
            break
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("the answer did not end in time")
    return b"".join(chunks)[:cap]


def _decode(raw: bytes, url: str, call: Call) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise call.error(scrub(f"{redact(url)} answered {call.what} with a body that is not "
                               f"JSON: {raw[:120].decode('utf-8', 'replace')!r}")) from None


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}… ({len(text):,} characters)"


def error_detail(body: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", "replace")[:200] or "<empty body>"


# -- the client: one per process, its connections reused ------------------------------------------

_LOCK = threading.Lock()
_CLIENT: dict[int, httpx.Client] = {}  # by process id: a forked child makes its own


def warm_up() -> None:
    """Import httpx and make the client now: a caller that times its requests (the gate's
    latency) calls this first, so that the first request is not charged for them."""
    _client()


def _client() -> httpx.Client:
    import httpx

    with _LOCK:
        client = _CLIENT.get(os.getpid())
        if client is None:
            if not _CLIENT:
                atexit.register(_close)
            _CLIENT.clear()  # a parent's client is the parent's to close
            client = httpx.Client(
                follow_redirects=False,
                limits=httpx.Limits(max_connections=MAX_CONNECTIONS,
                                    max_keepalive_connections=8))
            _CLIENT[os.getpid()] = client
        return client


def _close() -> None:
    with _LOCK:
        client = _CLIENT.pop(os.getpid(), None)
    if client is not None:
        client.close()
