"""Redaction: every URI or embedder spec goes through :func:`redact` before it is shown or stored.

A credential typed into one is replaced by ``***``: the password of the user-info part
(``postgresql://rw:***@db/kb``) and the value of every query parameter whose name says it holds a
secret (``api_key``, ``key``, ``token``, ``password``, ``secret``…), also inside a parameter whose
value is itself a URL (``openai-http?base_url=https://host/v1?key=***&model=m``). Names of
environment variables (``password_env``, ``api_key_env``) are kept: that is where secrets belong.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["ENV_HINT", "REDACTED", "has_secret", "is_secret_name", "redact", "redact_all"]

REDACTED = "***"

ENV_HINT = ("keep secrets in environment variables and name them instead: password_env=VAR in a "
            "store URI, api_key_env=VAR in an embedder spec")

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


def redact(text: str) -> str:
    """``text`` (a URI or an embedder spec) with every credential replaced by ``***``; returned
    unchanged, byte for byte, when it holds none."""
    try:
        parts = urlsplit(text)
    except ValueError:  # unparseable (a broken IPv6 host…): show no more than the scheme
        scheme = text.split("://", 1)[0] if "://" in text else ""
        return f"{scheme}://{REDACTED}" if scheme else REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        if sep:
            netloc = f"{user}:{REDACTED}@{hostport}"
    query = "&".join(_redact_pair(pair) for pair in parts.query.split("&"))
    if netloc == parts.netloc and query == parts.query:
        return text  # nothing secret: keep it as typed (urlunsplit would drop an empty "//")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


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
