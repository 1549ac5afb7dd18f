"""Store URIs: parsing. ``redact`` (re-exported from :mod:`recallwatch._redact`) is what every URI
goes through before it is shown or stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from recallwatch._redact import redact
from recallwatch.errors import UsageError

__all__ = ["StoreURI", "parse_store_uri", "redact"]


@dataclass(frozen=True)
class StoreURI:
    scheme: str
    host: str | None
    port: int | None
    path: str  # for file-backed stores: the local path (netloc + path joined)
    username: str | None
    password: str | None
    params: dict[str, str] = field(default_factory=dict)
    raw: str = ""

    def param(self, name: str, default: str | None = None) -> str | None:
        return self.params.get(name, default)


def parse_store_uri(uri: str) -> StoreURI:
    parts = urlsplit(uri)
    if not parts.scheme:
        raise UsageError(f"store URI {redact(uri)!r} has no scheme (e.g. lancedb://PATH?table=NAME)")
    try:
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"store URI {redact(uri)!r}: invalid port ({exc})") from exc
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
        username=parts.username,
        password=parts.password,
        params=params,
        raw=uri,
    )


# Schemes whose "netloc" is part of a local path: lancedb://./kb, lancedb:///abs/kb.
_FILE_SCHEMES = {"lancedb", "chroma", "milvus", "qdrant+local", "faiss", "hnswlib"}
