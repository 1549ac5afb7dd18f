"""The monitor's alarm, POSTed as JSON to a webhook."""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from recallwatch.errors import UsageError

__all__ = ["check_webhook", "post_webhook"]


def check_webhook(url: str) -> None:
    """Refuse a webhook URL that cannot be posted to (checked before the work it reports on)."""
    from recallwatch._redact import redact

    try:
        host = urlsplit(url).hostname
    except ValueError:  # a broken [IPv6] host
        host = None
    if not url.startswith(("http://", "https://")) or not host:
        raise UsageError(f"--webhook must be an http:// or https:// URL with a host name, found "
                         f"{redact(url)!r}")


def post_webhook(url: str, payload: dict[str, Any], *, timeout: float = 10.0) -> int:
    """POST ``payload`` as JSON; returns the HTTP status. Failures raise UsageError naming the URL
    redacted (a webhook URL often carries a token)."""
    from recallwatch._redact import redact

    shown = redact(url)
    check_webhook(url)
    body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # the scheme is checked above
            return int(resp.status)
    except OSError as exc:
        raise UsageError(f"webhook {shown} failed: {exc}") from None
