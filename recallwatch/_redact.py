"""Redaction: every URI or embedder spec goes through :func:`redact` before it is shown or stored.

A credential typed into one is replaced by ``***``: the password of the user-info part
(``postgresql://rw:***@db/kb``) and the value of every query parameter whose name says it holds a
secret (``api_key``, ``key``, ``token``, ``password``, ``secret``…), also inside a parameter whose
value is itself a URL (``openai-http?base_url=https://host/v1?key=***&model=m``). Names of
environment variables (``password_env``, ``api_key_env``) are kept: that is where secrets belong.

A password is found as a person typed it, even when it holds a character that a URI reserves
(``#``, ``/``, ``?``, ``@``, a space…) and should have been percent-encoded: everything from the
colon after the user name to the last ``@`` that a host follows (:func:`password_span`).

Secrets met while a command runs (a URI's password, a key read from the environment or sent in a
header) are remembered (:func:`remember`), and :func:`scrub` takes every one of them out of a text:
the command line passes everything it prints through it, so an engine or an endpoint that echoes
a secret in its error message does not get it shown.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = ["ENCODE_HINT", "ENV_HINT", "REDACTED", "forget", "has_secret", "is_secret_name",
           "password_span", "redact", "redact_all", "remember", "scrub"]

REDACTED = "***"

ENV_HINT = ("keep secrets in environment variables and name them instead: password_env=VAR in a "
            "store URI, api_key_env=VAR in an embedder spec")

ENCODE_HINT = ("percent-encode every character of the user name and password other than letters, "
               "digits and - . _ ~ (for example # as %23, / as %2F, ? as %3F, @ as %40, : as "
               "%3A, % as %25, a space as %20), or keep the password out of the URI: "
               "password_env=VAR names an environment variable that holds it")

_SECRET_WORDS = {"password", "passwd", "pwd", "pass", "secret", "token", "key", "apikey",
                 "credential", "credentials", "auth", "authorization", "signature", "sig"}
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "apikey")  # sslpassword, accesstoken


def is_secret_name(name: str) -> bool:
    """Whether a parameter called ``name`` holds a secret (``api_key``, ``X-Api-Key``,
    ``access_token``…); ``*_env`` names a variable, not a secret."""
    words = [w for w in re.split(r"[^a-z0-9]+", unquote(name).lower()) if w]
    if not words or words[-1] == "env":
        return False
    return (words[-1] in _SECRET_WORDS or words[-1].endswith(_SECRET_ENDINGS)
            or "".join(words) in _SECRET_WORDS)


def _redact_pair(pair: str) -> str:
    name, sep, value = pair.partition("=")
    if sep and is_secret_name(name):
        return f"{name}={REDACTED}"
    inner = unquote(value)
    if "://" in inner:  # a URL as a parameter (base_url=…): redact it too
        shown = redact(inner)
        if shown != inner:
            return f"{name}={shown}"
    return pair


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HOST = re.compile(r"[\w.\-\[\]:%~]*(?=[/?#]|$)")


def password_span(text: str) -> tuple[int, int] | None:
    """Where the password of ``scheme://user:password@host…`` lies in ``text`` (start, end), or
    None. The password runs from the colon after the user name to the last ``@`` followed by
    something shaped like a host, so a ``#``, ``/``, ``?`` or ``@`` typed into it unencoded stays
    inside it (a later ``@`` in the query can only make the span longer: more is hidden, never
    less)."""
    scheme = _SCHEME.match(text)
    if scheme is None:
        return None
    start = scheme.end()
    colon = text.find(":", start)
    if colon < 0 or any(c in text[start:colon] for c in "/?#@"):
        return None
    at = len(text)
    while (at := text.rfind("@", colon + 1, at)) >= 0:
        if _HOST.match(text, at + 1):
            return colon + 1, at
    return None


def redact(text: str) -> str:
    """``text`` (a URI or an embedder spec) with every credential replaced by ``***``; returned
    unchanged, byte for byte, when it holds none."""
    span = password_span(text)
    if span is not None:
        text = f"{text[:span[0]]}{REDACTED}{text[span[1]:]}"
    try:
        parts = urlsplit(text)
    except ValueError:  # unparseable (a broken IPv6 host…): show no more than the scheme
        scheme = text.split("://", 1)[0] if "://" in text else ""
        return f"{scheme}://{REDACTED}" if scheme else REDACTED
    query = "&".join(_redact_pair(pair) for pair in parts.query.split("&"))
    if query == parts.query:
        return text  # nothing more: keep it as typed (urlunsplit would drop an empty "//")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


_KNOWN: set[str] = set()
_SHORTEST = 4  # a shorter secret would hide every word that contains it, and protects little


def remember(secret: str | None) -> None:
    """Take ``secret`` (and its percent-encoded and -decoded forms) out of every text that
    :func:`scrub` sees from now on, in this process."""
    if not secret:
        return
    for form in (secret, unquote(secret), quote(secret, safe=""), quote(secret)):
        if len(form) >= _SHORTEST:
            _KNOWN.add(form)


def forget() -> None:
    """Drop every remembered secret: a command starts with none (those of an earlier command
    run in the same process would hide its words)."""
    _KNOWN.clear()


def scrub(text: str) -> str:
    """``text`` with every remembered secret replaced by ``***``."""
    for secret in sorted(_KNOWN, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def has_secret(text: str) -> bool:
    """Whether ``text`` holds a credential, or the ``***`` left where one was redacted."""
    probe = text.replace(REDACTED, "x")
    return redact(probe) != probe


def redact_all(value: Any) -> Any:
    """A JSON-like ``value`` (a configuration file recorded with results) with every string
    redacted, and the value of every secret-named key replaced."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and is_secret_name(k) and v is not None
                else redact_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_all(v) for v in value]
    return value
