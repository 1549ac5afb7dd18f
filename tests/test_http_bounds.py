"""post_json (recallwatch/_http.py) reads an answer within the file cap: an endpoint that sends
without end is refused once the cap is passed, against a real server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from recallwatch._files import FILE_CAP_VARIABLE
from recallwatch._http import Call, post_json
from recallwatch.errors import EmbedderError


class _Endless(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()  # no length: the body ends when the connection does, here never
        try:
            self.wfile.write(b'{"hits": [' )
            while True:
                self.wfile.write(b'{"id": "x", "score": 1.0}, ' * 4096)
        except OSError:  # the client stopped reading and closed
            return


@pytest.fixture
def endless() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/search"
    finally:
        server.shutdown()
        server.server_close()


def test_an_endless_answer_is_refused_at_the_cap(endless: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FILE_CAP_VARIABLE, "1")
    with pytest.raises(EmbedderError) as err:
        post_json(endless, {"query": "q"}, headers={},
                  call=Call(EmbedderError, "a search", max_retries=0))
    assert str(err.value) == (f"{endless} answered a search with more than 1,048,576 bytes; set "
                              f"{FILE_CAP_VARIABLE} (megabytes) to accept larger answers")
