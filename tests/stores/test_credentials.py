"""Passwords reach the engine from the environment or a credentials file, and never leak: not in
``store.uri``, not in error messages, not in logs. Checked against a real PostgreSQL that
requires SCRAM authentication."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from recallwatch.errors import InputError, StoreError, UsageError
from recallwatch.stores import open_store
from recallwatch.stores._credentials import resolve_secret
from recallwatch.stores._uri import parse_store_uri

from .conftest import PG_PASSWORD, PostgresServer

pytest.importorskip("psycopg", reason="pip install 'recallwatch[pgvector]'")


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.delenv("QDRANT_API_KEY", raising=False)
    monkeypatch.setenv("RECALLWATCH_CREDENTIALS", str(tmp_path / "absent.toml"))


@pytest.fixture
def everything_logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def _assert_no_secret(text: str, secret: str = PG_PASSWORD) -> None:
    assert secret not in text


def test_password_from_pgpassword(postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch,
                                  everything_logged: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PGPASSWORD", PG_PASSWORD)
    store = open_store(postgres_server.uri("cred_env"), create=True)
    store.set_meta("k", 1)
    assert store.get_meta("k") == 1
    _assert_no_secret(store.uri)
    _assert_no_secret(repr(store))
    store.close()
    _assert_no_secret(everything_logged.text)


def test_password_from_named_variable(postgres_server: PostgresServer,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PG_SECRET", PG_PASSWORD)
    store = open_store(postgres_server.uri("cred_var", "password_env=MY_PG_SECRET"), create=True)
    assert store.count() == 0
    assert store.uri.endswith("password_env=MY_PG_SECRET")  # the name is shown, not the value
    store.close()
    monkeypatch.delenv("MY_PG_SECRET")
    with pytest.raises(UsageError, match="environment variable MY_PG_SECRET is not set"):
        open_store(postgres_server.uri("cred_var", "password_env=MY_PG_SECRET"))


def test_password_from_credentials_file(postgres_server: PostgresServer, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    creds = tmp_path / "credentials.toml"
    creds.write_text(
        f'["postgresql://postgres@127.0.0.1:{postgres_server.port}"]\npassword = "{PG_PASSWORD}"\n'
    )
    monkeypatch.setenv("RECALLWATCH_CREDENTIALS", str(creds))
    store = open_store(postgres_server.uri("cred_file"), create=True)
    assert store.count() == 0
    store.close()


def test_inline_password_works_but_is_never_shown(
    postgres_server: PostgresServer, everything_logged: pytest.LogCaptureFixture,
) -> None:
    uri = postgres_server.uri("cred_inline").replace("postgres@", f"postgres:{PG_PASSWORD}@")
    store = open_store(uri, create=True)
    assert ":***@" in store.uri
    _assert_no_secret(store.uri)
    for version in store.versions():
        _assert_no_secret(str(version))
    store.close()
    _assert_no_secret(everything_logged.text)


def test_wrong_or_missing_password_is_a_clean_error_without_the_secret(
    postgres_server: PostgresServer, everything_logged: pytest.LogCaptureFixture,
) -> None:
    wrong = "Wr0ng-Secret-Value"
    uri = postgres_server.uri("cred_bad").replace("postgres@", f"postgres:{wrong}@")
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL") as err:
        open_store(uri)
    assert "password authentication failed" in str(err.value)
    _assert_no_secret(str(err.value), wrong)
    assert ":***@" in str(err.value)
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        open_store(postgres_server.uri("cred_bad"))  # no password configured anywhere
    _assert_no_secret(everything_logged.text, wrong)


def test_credentials_file_lookup_order_and_bad_file(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    creds = tmp_path / "c.toml"
    creds.write_text(
        '["postgresql://db.example:5432"]\npassword = "host-level"\n'
        '["postgresql://rw@db.example:5432"]\npassword = "user-level"\n'
        '["qdrant://q.example:6333"]\napi_key = "qkey"\n'
    )
    monkeypatch.setenv("RECALLWATCH_CREDENTIALS", str(creds))
    user = resolve_secret(parse_store_uri("postgresql://rw@db.example:5432/kb?table=t"))
    other = resolve_secret(parse_store_uri("postgresql://ro@db.example:5432/kb?table=t"))
    qdrant = resolve_secret(parse_store_uri("qdrant://q.example:6333/kb"), "api_key")
    assert user is not None and user.value == "user-level"
    assert other is not None and other.value == "host-level"
    assert qdrant is not None and qdrant.value == "qkey"
    assert "user-level" not in repr(user)  # a Secret never prints its value
    assert resolve_secret(parse_store_uri("postgresql://rw@elsewhere:5432/kb")) is None
    monkeypatch.setenv("PGPASSWORD", "from-env")
    env = resolve_secret(parse_store_uri("postgresql://rw@db.example:5432/kb"))
    assert env is not None and env.value == "from-env" and env.source == "$PGPASSWORD"

    monkeypatch.delenv("PGPASSWORD")
    creds.write_text('["postgresql://db.example:5432"]\npassword = "unterminated\n')
    with pytest.raises(InputError, match="expected a TOML credentials file") as err:
        resolve_secret(parse_store_uri("postgresql://x@other:1/kb"))
    assert "unterminated" not in str(err.value)  # the parser's excerpt could hold a secret


def test_cli_reports_an_unreachable_store_in_one_line_without_the_password() -> None:
    import socket

    from typer.testing import CliRunner

    from recallwatch.cli import app

    golden = Path(__file__).resolve().parents[2] / "examples" / "kb" / "golden.yaml"
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    uri = f"postgresql://rw:Sup3r-S3cret@127.0.0.1:{port}/kb?table=chunks"
    result = CliRunner().invoke(app, ["gate", str(golden), "--store", uri])
    assert result.exit_code == 2, result.output
    shown = f"postgresql://rw:***@127.0.0.1:{port}/kb?table=chunks"
    assert result.output.startswith(f"Error: {shown}: cannot connect to PostgreSQL")
    assert "Sup3r-S3cret" not in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
