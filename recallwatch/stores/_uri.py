"""Store URIs: parsing. ``redact`` (re-exported from :mod:`recallwatch._redact`) is what every URI
goes through before it is shown or stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from recallwatch._redact import ENCODE_HINT, password_span, redact, remember
from recallwatch.errors import UsageError

__all__ = ["StoreURI", "parse_store_uri", "redact"]


@dataclass(frozen=True)
class StoreURI:
    scheme: str
    host: str | None
    port: int | None
    path: str  # for file-backed stores: the local path (netloc + path joined)
    username: str | None
    password: str | None = field(repr=False)
    params: dict[str, str] = field(default_factory=dict)
    raw: str = field(default="", repr=False)

    def param(self, name: str, default: str | None = None) -> str | None:
        return self.params.get(name, default)


def parse_store_uri(uri: str) -> StoreURI:
    """The parts of a store URI; its user name and password percent-decoded. A password is never
    shown, even one that holds a reserved character and so breaks the URI (the error says to
    percent-encode it)."""
    span = password_span(uri)
    if span is not None:
        remember(uri[span[0]:span[1]])
    try:
        parts = urlsplit(uri)
    except ValueError as exc:  # "Invalid IPv6 URL": a host opened with [ and never closed
        raise UsageError(f"store URI {redact(uri)!r} cannot be read ({exc}): write an IPv6 "
                         "host in brackets, [::1], and "
                         f"{ENCODE_HINT}") from None
    if not parts.scheme:
        raise UsageError(f"store URI {redact(uri)!r} has no scheme (e.g. lancedb://PATH?table=NAME)")
    if span is not None and parts.password != uri[span[0]:span[1]]:
        raise UsageError(f"store URI {redact(uri)!r}: the password holds a character that ends "
                         f"the user-and-password part early: {ENCODE_HINT}")
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"store URI {redact(uri)!r}: the port must be a number from 0 to 65535 "
                         "(HOST:PORT)") from None
    local = parts.scheme in _FILE_SCHEMES and (
        parts.scheme != "milvus" or parts.path.endswith(".db"))  # Milvus: Lite file or server
    if local and "@" in parts.netloc:
        # user:password@ would become part of the local path (a directory named after them)
        raise UsageError(
            f"store URI {redact(uri)!r}: a {parts.scheme}:// store is a local path and takes no "
            f"user name or password (write {parts.scheme}://./PATH for a relative path "
            "containing '@')")
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    return StoreURI(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port,
        path=(parts.netloc + parts.path) if parts.scheme in _FILE_SCHEMES else parts.path,
        username=None if parts.username is None else unquote(parts.username),
        password=None if parts.password is None else unquote(parts.password),
        params=params,
        raw=uri,
    )


# Schemes whose "netloc" is part of a local path: lancedb://./kb, lancedb:///abs/kb.
_FILE_SCHEMES = {"lancedb", "chroma", "milvus", "qdrant+local", "faiss", "hnswlib"}
