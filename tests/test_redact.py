"""Redaction (recallwatch._redact): the one function every URI and embedder spec goes through
before it is shown or stored, and places that used their own."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from recallwatch._http import Call, post_json
from recallwatch._redact import has_secret, is_secret_name, redact, redact_all
from recallwatch.bench.sweep import load_sweep
from recallwatch.embedders.openai_http import OpenAIHTTPEmbedder
from recallwatch.errors import EmbedderError, JudgeError, UsageError
from recallwatch.ops.webhook import post_webhook

KEY = "sk-live-0123456789"


@pytest.mark.parametrize(("text", "shown"), [
    (f"postgresql://rw:{KEY}@db:5432/kb?table=t", "postgresql://rw:***@db:5432/kb?table=t"),
    (f"qdrant://h:6333?collection=c&api_key={KEY}", "qdrant://h:6333?collection=c&api_key=***"),
    (f"https://h/hook?token={KEY}&x=1", "https://h/hook?token=***&x=1"),
    (f"https://h/v1?X-Api-Key={KEY}", "https://h/v1?X-Api-Key=***"),
    (f"postgresql://db/kb?sslpassword={KEY}", "postgresql://db/kb?sslpassword=***"),
    # embedder specs: a secret option, and a URL option with its own password or key
    (f"openai-http?base_url=http://h/v1&model=m&api_key={KEY}",
     "openai-http?base_url=http://h/v1&model=m&api_key=***"),
    (f"openai-http?base_url=http://u:{KEY}@h/v1&model=m",
     "openai-http?base_url=http://u:***@h/v1&model=m"),
    (f"openai-http?base_url=http://h/v1?key={KEY}&model=m",
     "openai-http?base_url=http://h/v1?key=***&model=m"),
    (f"openai-http?base_url=http%3A%2F%2Fu%3A{KEY}%40h%2Fv1&model=m",
     "openai-http?base_url=http://u:***@h/v1&model=m"),
])
def test_credentials_are_replaced(text: str, shown: str) -> None:
    assert redact(text) == shown
    assert redact(shown) == shown
    assert has_secret(text) and has_secret(shown)  # "***" marks where a secret was


def test_unparseable_text_shows_no_more_than_its_scheme() -> None:
    assert redact(f"http://u:{KEY}@[::1/v1") == "http://***"


@pytest.mark.parametrize("text", [
    "lancedb://./kb?table=chunks", "lancedb:///abs/kb", "postgresql://rw@db/kb?password_env=PW",
    "openai-http?base_url=http://127.0.0.1:8000/v1&model=m&api_key_env=MY_KEY", "use-multilingual",
    "chroma://dir?a&b=", "s3://bucket/path?versionId=3",
])
def test_text_without_secrets_is_kept_byte_for_byte(text: str) -> None:
    assert redact(text) == text and not has_secret(text)


def test_secret_names() -> None:
    assert all(map(is_secret_name, ["password", "api_key", "apiKey", "key", "token", "secret",
                                    "access_token", "client-secret", "sig", "sslpassword"]))
    assert not any(map(is_secret_name, ["api_key_env", "password_env", "table", "keyspace",
                                        "model", "base_url", "collection", "monkey"]))


def test_redact_all_walks_a_configuration() -> None:
    config = {"dataset": {"store": f"postgresql://u:{KEY}@h/db?table=t"}, "api_key": KEY,
              "engines": [{"engine": "x", "url": f"http://h?token={KEY}"}], "k": 10}
    assert KEY not in json.dumps(redact_all(config))
    assert redact_all(config)["k"] == 10 and redact_all(config)["api_key"] == "***"


def test_webhook_errors_never_show_a_password(tmp_path: Path) -> None:
    # port 9 on loopback: nothing listens, the POST fails at once
    with pytest.raises(UsageError) as err:
        post_webhook(f"http://alerts:{KEY}@127.0.0.1:9/hook?token={KEY}", {}, timeout=2)
    assert KEY not in str(err.value) and "http://alerts:***@127.0.0.1:9/hook" in str(err.value)


def test_a_sweep_records_its_configuration_without_the_store_password(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"name: s\ndataset:\n  store: postgresql://rw:{KEY}@db/kb?table=t\n"
                    "engines:\n  - engine: faiss-flat\n", encoding="utf-8")
    raw = load_sweep(path).raw
    assert raw["dataset"] == {"store": "postgresql://rw:***@db/kb?table=t"}


@pytest.fixture
def echoing_endpoint() -> Iterator[str]:
    """A real HTTP server that answers every POST with 401 and the request's key in its error
    message, as some OpenAI-compatible endpoints do."""

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"error": {"message": "Incorrect API key provided: "
                                         f"{self.headers.get('Authorization')} (also "
                                         f"{self.headers.get('Authorization', '')[7:]})"}})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_a_key_echoed_by_an_endpoint_is_never_shown(echoing_endpoint: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"sk-echo-{KEY}-{os.getpid()}"
    with pytest.raises(JudgeError) as judged:
        post_json(echoing_endpoint, {}, headers={"Authorization": f"Bearer {key}"},
                  call=Call(JudgeError, "a grade", max_retries=0))
    assert "Incorrect API key provided: *** (also ***)" in str(judged.value)
    monkeypatch.setenv("ECHO_KEY", key + "-embedder")
    embedder = OpenAIHTTPEmbedder(echoing_endpoint, "m", api_key_env="ECHO_KEY", dimension=4,
                                  max_retries=0)
    with pytest.raises(EmbedderError) as embedded:
        embedder.embed_queries(["q"])
    for err in (judged, embedded):
        assert key not in str(err.value) and "answered HTTP 401" in str(err.value)
