"""The monitor's alarm, POSTed as JSON to a webhook (through :mod:`recallwatch._http`: no
redirect followed, so the report goes to the URL given and nowhere else)."""

from __future__ import annotations

import json
from typing import Any

from recallwatch._http import Call, check_url, post_status
from recallwatch.errors import UsageError

__all__ = ["check_webhook", "post_webhook"]


def check_webhook(url: str) -> None:
    """Refuse a webhook URL that cannot be posted to (checked before the work it reports on)."""
    check_url(url, "--webhook")


def post_webhook(url: str, payload: dict[str, Any], *, timeout: float = 10.0) -> int:
    """POST ``payload`` as JSON; returns the HTTP status. Failures (no answer, an error status, a
    redirect) raise UsageError naming the URL redacted (a webhook URL often carries a token)."""
    check_webhook(url)
    body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    call = Call(UsageError, "the monitor's alarm (--webhook)", timeout=timeout, max_retries=0,
                timeout_fix="check that the webhook's service is up",
                redirect_fix="give the URL it points to as --webhook")
    return post_status(url, body, headers={"Content-Type": "application/json"}, call=call)
