"""``http://…``: a real HTTP search service, started here on 127.0.0.1, that answers from a real
LanceDB store, gated end to end with the default request and with a mapped one; timeouts,
retries, garbage answers and credentials."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from recallwatch.errors import RetrieverError, UsageError
from recallwatch.retrievers import open_retriever
from tests.clirun import cli
from tests.retrievers.conftest import QUERIES, store_uri

SECRET = "s3cr3t-token-value"


class Service:
    """The store's answers, and a count of the requests each path received."""

    def __init__(self, kb: Path) -> None:
        from recallwatch.embedders import get_embedder
        from recallwatch.stores import open_store

        self.store = open_store(store_uri(kb))
        self.embedder = get_embedder()
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def hits(self, query: str, k: int) -> list[tuple[str, float]]:
        with self.lock:
            found = self.store.search(self.embedder.embed_queries([query]), k)[0]
        return list(zip(found.ids, (float(s) for s in found.scores)))

    def answer(self, path: str, request: dict[str, Any], headers: Any) -> tuple[int, bytes]:
        with self.lock:
            self.calls[path] = self.calls.get(path, 0) + 1
            count = self.calls[path]
        if path == "/search":
            hits = self.hits(request["query"], int(request["k"]))
            return 200, json.dumps({"hits": [{"id": i, "score": s} for i, s in hits]}).encode()
        if path == "/mapped":
            hits = self.hits(request["q"], int(request["size"]))
            return 200, json.dumps({"data": {"results": [
                {"doc": {"chunk_id": i}, "relevance": s} for i, s in hits]}}).encode()
        if path == "/slow":
            time.sleep(1.0)
            return 200, b'{"hits": []}'
        if path == "/flaky":
            if count % 2 == 1:
                return 503, b'{"error": {"message": "busy"}}'
            return 200, json.dumps({"hits": [{"id": "vac", "score": 1.0}]}).encode()
        if path == "/garbage":
            return 200, b"<html>not json</html>"
        if path == "/nolist":
            return 200, b'{"results": []}'
        if path == "/auth":
            if headers.get("Authorization") != f"Bearer {SECRET}":
                return 401, b'{"error": {"message": "no credential"}}'
            hits = self.hits(request["query"], int(request["k"]))
            return 200, json.dumps({"hits": [{"id": i, "score": s} for i, s in hits]}).encode()
        return 404, b"{}"


@pytest.fixture(scope="module")
def service(kb: Path) -> Iterator[tuple[str, Service]]:
    svc = Service(kb)

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, request: dict[str, Any]) -> None:
            code, body = svc.answer(urllib.parse.urlsplit(self.path).path, request, self.headers)
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)  # the client may have given up (a timeout test)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            self._reply(json.loads(self.rfile.read(length) or b"{}"))

        def do_GET(self) -> None:
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            self._reply({k: v[0] for k, v in query.items()})

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", svc
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        svc.store.close()


def store_tops(kb: Path) -> dict[str, list[str]]:
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--store", store_uri(kb),
                         "--no-history", "--format", "json")
    assert code in (0, 1), err
    return {q["id"]: [t["id"] for t in q["top"]] for q in json.loads(out)["queries"]}


def gate(kb: Path, tmp: Path, retriever: str) -> tuple[int, str, str]:
    pipeline = tmp / "pipeline.yaml"
    pipeline.write_text(f"retrievers:\n  api:\n{retriever}depth: 20\n", encoding="utf-8")
    return cli("gate", str(kb / "golden.yaml"), "--pipeline", str(pipeline), "--no-history",
               "--format", "json")


@pytest.mark.parametrize("options", [
    "",  # the default request and response
    "    method: GET\n    params: {q: '{query}', size: '{k}'}\n    hits: data.results\n"
    "    id: doc.chunk_id\n    score: relevance\n",
])
def test_a_search_service_is_gated_like_the_store(kb: Path, tmp_path: Path,
                                                  service: tuple[str, Service],
                                                  options: str) -> None:
    url, _ = service
    path = "/mapped" if options else "/search"
    code, out, err = gate(kb, tmp_path, f"    spec: {url}{path}\n    concurrency: 3\n{options}")
    assert code in (0, 1), err
    result = json.loads(out)
    assert {q["id"]: [t["id"] for t in q["top"]] for q in result["queries"]} == store_tops(kb)
    assert result["config"]["pipeline"]["retrievers"]["api"]["kind"] == "http"


def test_the_credential_comes_from_the_environment_and_is_never_shown(
        kb: Path, tmp_path: Path, service: tuple[str, Service],
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = service
    monkeypatch.setenv("SEARCH_TOKEN", SECRET)
    code, out, err = gate(kb, tmp_path, f"    spec: {url}/auth\n    api_key_env: SEARCH_TOKEN\n")
    assert code in (0, 1), err
    assert SECRET not in out + err
    assert json.loads(out)["config"]["pipeline"]["retrievers"]["api"]["api_key_env"] == \
        "SEARCH_TOKEN"
    monkeypatch.delenv("SEARCH_TOKEN")
    code, _, err = gate(kb, tmp_path, f"    spec: {url}/auth\n    api_key_env: SEARCH_TOKEN\n")
    assert code == 2 and "SEARCH_TOKEN" in err and "not set" in err


def test_a_busy_answer_is_retried_with_backoff(service: tuple[str, Service]) -> None:
    url, svc = service
    r = open_retriever(f"{url}/flaky", name="api", options={"backoff": 0.01, "retries": 2})
    assert r.search(["a"], 5) == [[("vac", 1.0)]]
    assert svc.calls["/flaky"] == 2  # a 503, then the answer


@pytest.mark.parametrize(("path", "options", "message"), [
    ("/slow", {"timeout": 0.2, "retries": 1, "backoff": 0.01},
     r"cannot reach http://127\.0\.0\.1:\d+/slow after 2 attempts: .*timed out"),
    ("/garbage", {}, r"answered query .* with a body that is not JSON: '<html>not json</html>'"),
    ("/nolist", {}, r"without 'hits' \(no 'hits' in keys results\): set the option hits"),
    ("/missing", {"retries": 0}, r"answered HTTP 404"),
])
def test_timeouts_and_garbage_are_located_errors(service: tuple[str, Service], path: str,
                                                 options: dict[str, Any], message: str) -> None:
    url, _ = service
    with pytest.raises(RetrieverError, match=message):
        open_retriever(f"{url}{path}", name="api", options=options).search(["a"], 5)


def test_an_endpoint_that_times_out_exits_2(kb: Path, tmp_path: Path,
                                            service: tuple[str, Service]) -> None:
    url, _ = service
    code, _, err = gate(kb, tmp_path, f"    spec: {url}/slow\n    timeout: 0.2\n    retries: 0\n")
    assert code == 2 and "/slow" in err and "timed out" in err and "Traceback" not in err


def test_unknown_options_list_the_valid_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown option\(s\) timout; valid: api_key_env, "):
        open_retriever("http://127.0.0.1:9/x", options={"timout": 3})


def test_every_query_gets_its_own_answer_under_concurrency(
        service: tuple[str, Service]) -> None:
    url, svc = service
    texts = [t for _, t, _ in QUERIES] * 3
    r = open_retriever(f"{url}/search", name="api", options={"concurrency": 4})
    assert r.search(texts, 3) == [svc.hits(t, 3) for t in texts]
