"""The OpenAI-compatible HTTP embedder against a real HTTP server on 127.0.0.1 serving USE."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.embedders import embedder_from_spec
from recallwatch.embedders.base import fingerprint_of
from recallwatch.embedders.openai_http import OpenAIHTTPEmbedder
from recallwatch.embedders.use import USEEmbedder
from recallwatch.errors import EmbedderError, UsageError

TEXTS = ["¿Cuántos días de vacaciones?", "Cuota mensual de autónomos", "Modelo 303 del IVA"]
KEY = "sk-test-not-a-real-key"


class _Server:
    """/v1/embeddings over USE, plus switches to make it fail on purpose."""

    def __init__(self, model: USEEmbedder) -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []  # HTTP statuses to answer with before succeeding
        self.require_key: str | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("Authorization")})
                if server.fail_next:
                    self._send(server.fail_next.pop(0),
                               {"error": {"message": "overloaded, try later"}})
                    return
                if server.require_key and self.headers.get("Authorization") != \
                        f"Bearer {server.require_key}":
                    self._send(401, {"error": {"message": "invalid api key"}})
                    return
                vectors = server.model.embed_documents(body["input"])
                data = [{"object": "embedding", "index": i, "embedding": v.tolist()}
                        for i, v in enumerate(vectors)]
                data.reverse()  # clients must order by "index", not by position
                self._send(200, {"object": "list", "data": data, "model": body["model"]})

            def _send(self, status: int, obj: dict[str, Any]) -> None:
                raw = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server(use: USEEmbedder) -> Iterator[_Server]:
    srv = _Server(use)
    thread = threading.Thread(target=srv.httpd.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()
    thread.join()


def test_vectors_equal_the_served_model(server: _Server, use: USEEmbedder) -> None:
    emb = OpenAIHTTPEmbedder(server.url, "use-multilingual", batch_size=2)
    assert emb.dimension == 512  # discovered with one probe request
    out = emb.embed_documents(TEXTS)
    np.testing.assert_allclose(out, use.embed_documents(TEXTS), atol=1e-6)
    assert out.dtype == np.float32
    batches = [r["body"]["input"] for r in server.requests[1:]]
    assert batches == [TEXTS[:2], TEXTS[2:]]
    assert all(r["path"] == "/v1/embeddings" for r in server.requests)
    assert fingerprint_of(emb).name == "openai-http:use-multilingual"


def test_prefixes_and_input_type_are_sent(server: _Server) -> None:
    emb = OpenAIHTTPEmbedder(server.url, "m", dimension=512, query_prefix="query: ",
                             document_prefix="passage: ", input_type=True)
    emb.embed_queries(["a"])
    emb.embed_documents(["b"])
    assert [r["body"]["input"] for r in server.requests] == [["query: a"], ["passage: b"]]
    assert [r["body"]["input_type"] for r in server.requests] == ["query", "passage"]


def test_api_key_comes_from_the_named_env_var(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.require_key = KEY
    monkeypatch.setenv("RW_TEST_KEY", KEY)
    spec = f"openai-http?base_url={server.url}&model=m&api_key_env=RW_TEST_KEY"
    emb = embedder_from_spec(spec)
    assert emb.embed_queries(["x"]).shape == (1, 512)
    assert server.requests[-1]["auth"] == f"Bearer {KEY}"
    assert KEY not in spec and KEY not in repr(emb)
    assert KEY not in json.dumps(vars(emb), default=str)  # only the variable's name is kept
    monkeypatch.delenv("RW_TEST_KEY")
    with pytest.raises(UsageError, match=r"read from \$RW_TEST_KEY, which is not set"):
        emb.embed_queries(["x"])
    monkeypatch.setenv("RW_TEST_KEY", "wrong")
    with pytest.raises(EmbedderError, match="HTTP 401 for model 'm': invalid api key"):
        emb.embed_queries(["x"])


def test_retries_then_reports_the_server_message(server: _Server) -> None:
    emb = OpenAIHTTPEmbedder(server.url, "m", dimension=512, max_retries=2, retry_wait=0.01)
    server.fail_next = [503, 429]
    assert emb.embed_queries(["x"]).shape == (1, 512)  # two retries, then success
    server.fail_next = [500, 500, 500]
    with pytest.raises(EmbedderError, match="HTTP 500 for model 'm': overloaded, try later"):
        emb.embed_queries(["x"])


def test_unreachable_and_bad_urls() -> None:
    with pytest.raises(UsageError, match="must start with http"):
        OpenAIHTTPEmbedder("127.0.0.1:1/v1", "m")
    # port 9 on loopback (discard): nothing listens; fails fast, no retries
    with pytest.raises(EmbedderError, match=r"cannot reach http://127.0.0.1:9/v1/embeddings"):
        OpenAIHTTPEmbedder("http://127.0.0.1:9/v1", "m", max_retries=0)


# -- a key is never printed or written -------------------------------------------------------------

SECRET = "sk-live-must-never-leak-4711"


def _files_holding(root: Path, secret: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_key_never_reaches_output_store_history_or_reports(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recommended way (api_key_env) works end to end; a key typed into a spec is refused
    with a redacted message that says where keys belong; the key is in no output and no file."""
    from typer.testing import CliRunner

    from recallwatch.cli import app

    runner = CliRunner()
    server.require_key = SECRET
    monkeypatch.setenv("RW_TEST_KEY", SECRET)
    corpus, golden = tmp_path / "c.jsonl", tmp_path / "g.json"
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "text": t}) + "\n"
                              for i, t in enumerate(TEXTS)), encoding="utf-8")
    golden.write_text(json.dumps({"name": "g", "queries": [
        {"id": "q1", "text": "vacaciones", "expected": ["c0"]}]}), encoding="utf-8")
    store, history, reports = f"lancedb://{tmp_path / 'kb'}?table=chunks", tmp_path / "h.db", \
        tmp_path / "rep"
    outputs = []

    def run(*args: str) -> Any:
        r = runner.invoke(app, list(args))
        outputs.extend([r.stdout, r.stderr])
        return r

    good = f"openai-http?base_url={server.url}&model=m&api_key_env=RW_TEST_KEY"
    assert run("ingest", str(corpus), "--store", store, "--embedder", good,
               "--no-progress").exit_code == 0
    r = run("gate", str(golden), "--store", store, "--history", str(history),
            "--report", str(reports), "--format", "json")
    assert r.exit_code in (0, 1), r.stderr  # the embedder rebuilt from the recorded spec
    port = server.url.split(":")[2].split("/")[0]
    refusals = {
        f"openai-http?base_url=http://u:{SECRET}@127.0.0.1:{port}/v1&model=m":
            f"base_url must not hold a password or key, found 'http://u:***@127.0.0.1:{port}/v1'",
        f"openai-http?base_url={server.url}?api_key={SECRET}&model=m":
            f"base_url must not hold a password or key, found '{server.url}?api_key=***'",
    }
    for spec, message in refusals.items():
        for command in (["ingest", str(corpus), "--store", store, "--no-progress"],
                        ["gate", str(golden), "--store", store, "--history", str(history),
                         "--report", str(tmp_path / "rep2")]):
            r = run(*command, "--embedder", spec)
            assert r.exit_code == 2
            assert r.stderr == (f"Error: {message}: put the API key in an environment variable "
                                "and name it with api_key_env=VAR (a spec recorded with an "
                                "index never keeps a secret)\n")
    r = run("gate", str(golden), "--store", store, "--embedder", f"{good}&api_key={SECRET}")
    assert r.exit_code == 2
    assert r.stderr.endswith("; keep secrets in environment variables and name them instead: "
                             "password_env=VAR in a store URI, api_key_env=VAR in an embedder "
                             "spec\n")
    assert not [o for o in outputs if SECRET in o]
    assert _files_holding(tmp_path, SECRET) == []
    assert sorted(p.name for p in reports.iterdir()) == [
        "junit.xml", "report.html", "report.json", "report.md"]


def test_a_spec_stored_by_the_api_keeps_no_secret(server: _Server, tmp_path: Path) -> None:
    """ingest() redacts whatever spec its caller records; a gate rebuilding the embedder from
    that spec then says what is missing instead of sending '***' as a key."""
    from recallwatch.embedders import embedder_for_store
    from recallwatch.ops.ingest import ingest
    from recallwatch.stores import open_store

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "text": t}) + "\n"
                              for i, t in enumerate(TEXTS)), encoding="utf-8")
    store = open_store(f"lancedb://{tmp_path / 'kb'}?table=chunks", create=True)
    try:
        ingest(corpus, store, OpenAIHTTPEmbedder(server.url, "m"),
               embedder_spec=f"openai-http?base_url={server.url}?key={SECRET}&model=m")
        with pytest.raises(UsageError) as err:
            embedder_for_store(store)
    finally:
        store.close()
    assert str(err.value).startswith(
        f"base_url must not hold a password or key, found '{server.url}?key=***': put the API "
        "key in an environment variable and name it with api_key_env=VAR")
    assert _files_holding(tmp_path, SECRET) == []
