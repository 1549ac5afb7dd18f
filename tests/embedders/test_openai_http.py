"""The OpenAI-compatible HTTP embedder against a real HTTP server on 127.0.0.1 serving USE."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
