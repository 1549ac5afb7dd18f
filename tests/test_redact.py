"""Redaction (recallwatch._redact): the one function every URI and embedder spec goes through
before it is shown or stored, and places that used their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallwatch._redact import has_secret, is_secret_name, redact, redact_all
from recallwatch.bench.sweep import load_sweep
from recallwatch.errors import UsageError
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
