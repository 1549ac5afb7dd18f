"""An OpenAI-compatible chat endpoint named in one spec, for the generator and the LLM judge:

    http://127.0.0.1:8000/v1?model=llama3&api_key_env=MY_KEY&timeout=120

The URL is the API's base (``/chat/completions`` is added); after ``?`` come the settings:
``model`` (required), ``api_key_env`` (the name of the environment variable that holds the key:
a key is never written in a spec, which is shown and recorded), ``timeout`` (seconds per
request) and whatever the caller adds (the generator's ``prompt`` and ``max_tokens``). The
requests go through the client of :mod:`recallwatch.judgments.llm_judge` (httpx, retries, no
redirect, no secret in any message).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from recallwatch._http import check_url
from recallwatch._redact import ENV_HINT, is_secret_name, redact
from recallwatch._registry import suggest
from recallwatch.errors import UsageError
from recallwatch.judgments.llm_judge import ChatClient

__all__ = ["ChatSpec", "is_chat_spec", "parse_chat_spec"]

_COMMON = ("model", "api_key_env", "timeout")


def is_chat_spec(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


@dataclass(frozen=True)
class ChatSpec:
    base_url: str
    model: str
    api_key_env: str | None
    timeout: float
    options: dict[str, str]  # the caller's own settings
    what: str = "the endpoint"  # the option that named it (--generator)

    def client(self, *, max_tokens: int, max_chars: int = 4000) -> ChatClient:
        return ChatClient(self.base_url, self.model, api_key_env=self.api_key_env,
                          timeout=self.timeout, max_tokens=max_tokens, max_chars=max_chars,
                          timeout_fix=f"if the endpoint is only slow, raise its timeout: "
                          f"&timeout=SECONDS in {self.what} (now {self.timeout:g})")

    def describe(self) -> dict[str, object]:
        """What a report records of the endpoint: no secret."""
        return {"base_url": redact(self.base_url), "model": self.model,
                "api_key_env": self.api_key_env}


def parse_chat_spec(spec: str, what: str, extra: tuple[str, ...] = ()) -> ChatSpec:
    """``URL?model=…&…``; ``what`` names the setting in messages (``--generator``)."""
    parts = urlsplit(spec)
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    check_url(base, what)
    options: dict[str, str] = {}
    valid = [*_COMMON, *extra]
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in valid:
            hint = f"; {ENV_HINT}" if is_secret_name(key) else ""
            raise UsageError(f"{what}: unknown setting {key!r}{suggest(key, valid)} in "
                             f"{redact(spec)!r}; valid: {', '.join(valid)}{hint}")
        options[key] = value
    model = options.pop("model", "").strip()
    if not model:
        raise UsageError(f"{what}: name the model at the endpoint, e.g. "
                         f"{base}?model=NAME (found {redact(spec)!r})")
    timeout_text = options.pop("timeout", "60")
    try:
        timeout = float(timeout_text)
    except ValueError:
        timeout = float("nan")
    if not 0.001 <= timeout <= 3600:  # NaN too
        raise UsageError(f"{what}: timeout must be a number of seconds from 0.001 to 3600, "
                         f"found {timeout_text!r}")
    key_env = options.pop("api_key_env", None) or None
    return ChatSpec(base, model, key_env, timeout, options, what)
