"""The monitor's alarm, POSTed as JSON to a webhook."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from recallwatch.errors import UsageError

__all__ = ["post_webhook"]


def post_webhook(url: str, payload: dict[str, Any], *, timeout: float = 10.0) -> int:
    """POST ``payload`` as JSON; returns the HTTP status. Failures raise UsageError naming the URL
    redacted (a webhook URL often carries a token)."""
    from recallwatch._redact import redact

    shown = redact(url)
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--webhook must be an http:// or https:// URL, found {shown!r}")
    body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # the scheme is checked above
            return int(resp.status)
    except OSError as exc:
        raise UsageError(f"webhook {shown} failed: {exc}") from None
