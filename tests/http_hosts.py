"""Local HTTP servers for the tests of recallwatch's HTTP clients: each listens on 127.0.0.1 on
a port of its own, in a thread, records every request it receives (method, path, the Host it
was sent to, headers, body) and answers with what the test's route returns.

Two of them are two hosts as a client sees them (another port is another origin); a URL naming
``localhost`` instead of ``127.0.0.1`` is another host by name, on the same server."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    host: str  # the Host header: which name the client sent it to
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


Answer = tuple[int, dict[str, str], bytes | Iterable[bytes]]


class Host:
    """A server answering every request with ``route(seen, host)``; ``seen`` lists them all."""

    def __init__(self, route: Callable[[Seen, Host], Answer]) -> None:
        self.seen: list[Seen] = []
        self.closing = threading.Event()  # set at the end: a stalled answer gives up then
        host = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(self.command, self.path, self.headers.get("Host", ""),
                            dict(self.headers.items()), self.rfile.read(length))
                host.seen.append(seen)
                status, headers, body = route(seen, host)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if isinstance(body, bytes):
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                chunks = [body] if isinstance(body, bytes) else body
                with contextlib.suppress(OSError):  # the client may have given up
                    for chunk in chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@contextlib.contextmanager
def serving(route: Callable[[Seen, Host], Answer]) -> Iterator[Host]:
    host = Host(route)
    try:
        yield host
    finally:
        host.close()


def json_answer(obj: Any, status: int = 200) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(obj).encode()


def redirect(status: int, location: str) -> Answer:
    return status, {"Location": location, "Content-Length": "0"}, b""


def stall(seen: Seen, host: Host) -> Answer:
    """No answer until the server closes (a stalled endpoint)."""
    host.closing.wait(60)
    return json_answer({})


def trickle(seen: Seen, host: Host) -> Answer:
    """An answer that starts at once and never ends: a space every 50 ms."""
    def spaces() -> Iterator[bytes]:
        yield b'{"hits": ['
        while not host.closing.wait(0.05):
            yield b" "
    return 200, {"Content-Type": "application/json"}, spaces()
