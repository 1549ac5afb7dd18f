"""What both local pages (the dashboard and the judging page) check before any request runs.

:class:`Guard` wraps an ASGI app and refuses, before the app sees anything:

* a request with more than one ``Host`` header: status 400, as HTTP/1.1 asks (RFC 9112,
  section 3.2); a check of the first alone would let a second name reach the app;
* a ``Host`` header that does not name this server exactly: ``localhost``, ``127.0.0.1`` or
  ``[::1]`` (with or without a port), or the ``--host`` the server was started with. A web page
  that points its own name at 127.0.0.1 (DNS rebinding) sends its own name, so it is refused:
  ``127.evil.example`` or ``127.0.0.1.nip.io`` are not ``127.0.0.1``. Status 421;
* a request body over :data:`MAX_BODY` bytes (64 KB): status 413, read no further;
* with an access token, a request that does not carry it (status 401). The token is given once
  in the address (``?token=…``); the answer sets it in a cookie (HttpOnly, SameSite=Strict, its
  name derived from the token so two servers on one machine keep their own) and sends the
  browser to the same address without it, so the token does not stay in the address bar or the
  browser history. Scripts may send ``Authorization: Bearer TOKEN`` instead.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import string
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from recallwatch.errors import UsageError

__all__ = ["LOOPBACK_HOSTS", "MAX_BODY", "Guard", "check_token", "host_allowed", "host_name",
           "served_names"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
MAX_BODY = 64 * 1024  # the largest request either page needs is a grade: about 200 bytes


def host_name(header: str) -> str | None:
    """The host name of a ``Host`` header, lower-cased, without its port (an IPv6 address keeps
    its brackets); None when the header is not ``NAME`` or ``NAME:DIGITS``."""
    text = header.lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        name, rest = text[: end + 1], text[end + 1:]
    else:
        name, colon, port = text.partition(":")
        rest = colon + port
    if rest and not (rest[0] == ":" and rest[1:].isascii() and rest[1:].isdigit()):
        return None
    return name or None


def served_names(bound: str) -> frozenset[str] | None:
    """The host names a server bound to ``bound`` (a ``--host`` value) answers to: the loopback
    names and ``bound`` itself as a Host header writes it. None for a wildcard address
    (``0.0.0.0``, ``::``): the machine's every name and address reach it, and only an access
    token can tell a person from a page in their browser."""
    name = bound.strip("[]").lower()
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return LOOPBACK_HOSTS | {name}
    if address.is_unspecified:
        return None
    return LOOPBACK_HOSTS | {f"[{address.compressed}]" if address.version == 6 else name}


def host_allowed(header: str | None, names: frozenset[str] | None) -> bool:
    """Whether a ``Host`` header names one of ``names`` exactly (None: any well-formed one)."""
    name = None if header is None else host_name(header)
    if name is None:
        return False
    if name.startswith("["):  # [::0001] is [::1]: compare addresses, not spellings
        try:
            name = f"[{ipaddress.IPv6Address(name[1:-1]).compressed}]"
        except ValueError:
            return False
    return names is None or name in names


_TOKEN_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~")


def check_token(token: str, option: str) -> str:
    """``token`` if it can serve as an access token: 16 or more characters, each a letter, a
    digit or one of ``-._~`` (it goes into an address and a cookie as it is)."""
    if len(token) < 16 or not set(token) <= _TOKEN_CHARACTERS:
        raise UsageError(f"{option}: an access token must be at least 16 characters, each a "
                         "letter, a digit or one of - . _ ~ (found "
                         f"{len(token)} characters); leave it out to have one made for you")
    return token


def _cookie_name(token: str) -> str:
    return "recallwatch_" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _count(scope: Scope, name: bytes) -> int:
    return sum(1 for key, _ in scope.get("headers", []) if key.lower() == name)


async def _plain(send: Send, status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode()),
               (b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store"),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """``app`` behind the Host check, the body limit and, with ``token``, the access token.

    ``names``: the Host names served (:func:`served_names`; None for any). ``what`` names the
    page in the refusals."""

    def __init__(self, app: ASGIApp, *, names: frozenset[str] | None, what: str,
                 token: str | None = None, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.names = names
        self.what = what
        self.token = token
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = _count(scope, b"host")
        if hosts > 1:
            await _plain(send, 400, f"{self.what} refused a request with {hosts} Host headers: "
                         "a request names its host once (HTTP/1.1, RFC 9112 section 3.2)")
            return
        host = _header(scope, b"host")
        if not host_allowed(host, self.names):
            shown = "no Host header" if host is None else f"the host name {host[:80]!r}"
            await _plain(send, 421, f"{self.what} refused {shown}: it answers only to "
                         f"{', '.join(sorted(self.names or LOOPBACK_HOSTS))} (open the "
                         "address it printed when it started)")
            return
        if self.token is not None and not await _authorised(scope, send, self.token, self.what):
            return
        body = await self._body(scope, receive, send)
        if body is None:
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole request body, or None once a 413 (or a client gone) ended the request."""
        declared = _header(scope, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.max_body:
            await self._too_large(send)
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.max_body:
                await self._too_large(send)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _too_large(self, send: Send) -> None:
        await _plain(send, 413, f"{self.what} refused a request body over {self.max_body:,} "
                     "bytes: no request it answers needs one that large",
                     [(b"connection", b"close")])


async def _authorised(scope: Scope, send: Send, token: str, what: str) -> bool:
    """Whether the request carries ``token`` (else answered: 401, or 303 to set the cookie)."""
    expected = token.encode("utf-8")
    cookie_name = _cookie_name(token)
    query = parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1"),
                      keep_blank_values=True)
    given = [v for k, v in query if k == "token"]
    if given:
        if not hmac.compare_digest(given[-1].encode("utf-8"), expected):
            await _plain(send, 401, f"{what}: wrong access token in the address "
                         "(open the address it printed when it started)")
            return False
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        path = scope.get("raw_path") or quote(str(scope["path"])).encode("ascii")
        location = bytes(path) + (f"?{rest}".encode("ascii") if rest else b"")
        cookie = f"{cookie_name}={token}; Path=/; HttpOnly; SameSite=Strict"
        await _plain(send, 303, "signed in", [(b"location", location),
                                              (b"set-cookie", cookie.encode("ascii"))])
        return False
    bearer = _header(scope, b"authorization") or ""
    if bearer.startswith("Bearer ") and hmac.compare_digest(
            bearer[7:].strip().encode("utf-8"), expected):
        return True
    for part in (_header(scope, b"cookie") or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == cookie_name and hmac.compare_digest(value.encode("utf-8"), expected):
            return True
    await _plain(send, 401, f"{what} needs its access token: open the address with "
                 "?token=… that it printed when it started (or send the header "
                 "'Authorization: Bearer TOKEN')")
    return False
