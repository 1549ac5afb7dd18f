"""Where a store's password or API key comes from. Never from a URI that is stored or shown.

In order: the URI itself (accepted when typed, but ``store.uri`` and every message show it
redacted, so a URI read back from history needs one of the others), ``?password_env=VAR``, the
engine's usual environment variable (``PGPASSWORD``, ``QDRANT_API_KEY``), then a credentials file
(``$RECALLWATCH_CREDENTIALS`` or ``~/.config/recallwatch/credentials.toml``) whose tables are named
by ``scheme://user@host:port``, ``scheme://host:port`` or ``scheme://host``::

    ["postgresql://rw@db.internal:5432"]
    password = "…"

    ["qdrant://qdrant.internal:6333"]
    api_key = "…"
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from recallwatch._redact import remember
from recallwatch.errors import InputError, UsageError
from recallwatch.stores._uri import StoreURI

__all__ = ["Secret", "credentials_path", "resolve_secret"]

_DEFAULT_ENV = {"postgresql": "PGPASSWORD", "postgres": "PGPASSWORD", "qdrant": "QDRANT_API_KEY"}


@dataclass(frozen=True)
class Secret:
    """A password and where it came from; its repr never shows the value."""

    value: str = field(repr=False)
    source: str


def credentials_path() -> Path:
    env = os.environ.get("RECALLWATCH_CREDENTIALS")
    return Path(env) if env else Path.home() / ".config" / "recallwatch" / "credentials.toml"


def _from_file(uri: StoreURI, key: str) -> Secret | None:
    path = credentials_path()
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        # The parser's message quotes the offending line, which may hold a secret: leave it out.
        raise InputError(source=path, expected="a TOML credentials file",
                         found=f"<unreadable: {type(exc).__name__}>") from None
    hostport = f"{uri.host}:{uri.port}" if uri.port else f"{uri.host}"
    names = [f"{uri.scheme}://{hostport}", f"{uri.scheme}://{uri.host}"]
    if uri.username:
        names.insert(0, f"{uri.scheme}://{uri.username}@{hostport}")
    for name in names:
        entry = data.get(name)
        if isinstance(entry, dict) and key in entry:
            if not isinstance(entry[key], str):
                raise InputError(source=path, record=name, field=key, expected="a string",
                                 found=f"<{type(entry[key]).__name__}>")
            return Secret(entry[key], f"{path} [{name}]")
    return None


def resolve_secret(uri: StoreURI, key: str = "password") -> Secret | None:
    """The secret for this URI, or None when none is configured (the engine may not need one).
    Whatever it is, no message printed afterwards shows it (:func:`recallwatch._redact.scrub`)."""
    secret = _resolve(uri, key)
    if secret is not None:
        remember(secret.value)
    return secret


def _resolve(uri: StoreURI, key: str) -> Secret | None:
    if uri.password:
        return Secret(uri.password, "the URI")
    var = uri.param("password_env")
    if var is not None:
        if var not in os.environ:
            raise UsageError(f"password_env={var}: environment variable {var} is not set")
        return Secret(os.environ[var], f"${var}")
    default = _DEFAULT_ENV.get(uri.scheme)
    if default and os.environ.get(default):
        return Secret(os.environ[default], f"${default}")
    return _from_file(uri, key)
