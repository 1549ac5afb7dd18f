"""The checks both local pages share (recallwatch/web/_guard.py): the Host header named exactly,
the body limit, and the dashboard's access token, in process over httpx's ASGI transport and
against the real `recallwatch serve` in its own process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from recallwatch.acceptance.model import GateResult
from recallwatch.errors import UsageError
from recallwatch.web import create_app
from recallwatch.web._guard import MAX_BODY, host_allowed, host_name, served_names
from tests.web.conftest import serving, wait_up

Site = tuple[Path, Path, list[GateResult]]
TOKEN = "Tok3n-for.the~dashboard_0123"
LOOPBACK = served_names("127.0.0.1")
HOSTILE_HOSTS = ["127.evil.example", "127.0.0.1.nip.io", "localhost.evil.example",
                 "evil.example", "127.0.0.1:80@evil.example", "127.0.0.1:8000x", "[::1]x",
                 "[::1", "", "127.0.0.2", "localhost.", "127.1"]


@pytest.mark.parametrize(("header", "name"), [
    ("localhost", "localhost"), ("LOCALHOST:8000", "localhost"), ("127.0.0.1:1", "127.0.0.1"),
    ("[::1]", "[::1]"), ("[::1]:8765", "[::1]"), ("a:b", None), ("[::1]:", None),
    ("127.0.0.1:٣", None), ("[::1", None), ("", None),
])
def test_host_name(header: str, name: str | None) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize("header", ["localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:9",
                                    "[::1]", "[::1]:80", "[0:0::1]:80", "LocalHost:1"])
def test_loopback_names_are_served(header: str) -> None:
    assert host_allowed(header, LOOPBACK)


@pytest.mark.parametrize("header", HOSTILE_HOSTS)
def test_other_names_are_refused_not_prefix_matched(header: str) -> None:
    assert not host_allowed(header, LOOPBACK)
    assert not host_allowed(None, LOOPBACK)


def test_the_bound_host_is_served_exactly() -> None:
    lan = served_names("192.168.1.5")
    assert lan is not None and host_allowed("192.168.1.5:8000", lan)
    assert not host_allowed("192.168.1.50", lan) and not host_allowed("192.168.1.5.evil", lan)
    named = served_names("Box.Example")
    assert named is not None and host_allowed("box.example:80", named)
    assert not host_allowed("box.example.evil", named)
    assert served_names("::1") == LOOPBACK
    assert served_names("0.0.0.0") is None and served_names("::") is None


async def fetch(app: object, method: str, url: str, *, host: str = "127.0.0.1:8000",
                **kwargs: object) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
        return await client.request(method, url, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("host", HOSTILE_HOSTS[:4])
def test_dashboard_refuses_a_foreign_host(site: Site, host: str) -> None:
    app = create_app(site[0])
    r = asyncio.run(fetch(app, "GET", "/", headers={"host": host}))
    assert r.status_code == 421
    assert r.text.startswith(f"the dashboard refused the host name {host!r}: it answers only "
                             "to 127.0.0.1, [::1], localhost")
    assert site[2][-1].run_id not in r.text
    ok = asyncio.run(fetch(app, "GET", "/", host="localhost:8000"))
    assert ok.status_code == 200 and site[2][-1].run_id in ok.text


def test_dashboard_token_by_address_then_cookie(site: Site) -> None:
    app = create_app(site[0], token=TOKEN)
    last = site[2][-1].run_id

    async def session() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            for url in ("/", f"/runs/{last}", "/trends"):
                r = await c.get(url)
                assert r.status_code == 401 and last not in r.text
                assert "needs its access token" in r.text
            r = await c.get("/runs/latest?token=wrong-token-0123456")
            assert r.status_code == 401 and "wrong access token" in r.text
            r = await c.get(f"/trends?last=5&token={TOKEN}")
            assert r.status_code == 303 and r.headers["location"] == "/trends?last=5"
            cookie = r.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            r = await c.get("/runs/latest")  # the client kept the cookie
            assert r.status_code == 200 and last in r.text
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000",
                                     headers={"Authorization": f"Bearer {TOKEN}"}) as c:
            assert (await c.get("/")).status_code == 200
        other = create_app(site[0], token="another-token-of-a-second-server")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=other),
                                     base_url="http://127.0.0.1:8000",
                                     cookies=dict(c.cookies.items())) as c2:
            assert (await c2.get("/")).status_code == 401

    asyncio.run(session())


@pytest.mark.parametrize("token", ["short", "has space in it 0123", "semi;colon=0123456789",
                                   "ñññññññññññññññññ"])
def test_a_bad_token_is_refused_up_front(site: Site, token: str) -> None:
    with pytest.raises(UsageError, match="an access token must be at least 16 characters"):
        create_app(site[0], token=token)


def test_every_address_needs_a_token(site: Site) -> None:
    with pytest.raises(UsageError, match=r"served on every address \(0\.0\.0\.0\) needs an "):
        create_app(site[0], host="0.0.0.0")
    app = create_app(site[0], host="0.0.0.0", token=TOKEN)
    r = asyncio.run(fetch(app, "GET", "/", host="198.51.100.7:8000"))
    assert r.status_code == 401  # any name reaches it, but only with the token


def test_dashboard_refuses_large_bodies(site: Site) -> None:
    app = create_app(site[0])
    r = asyncio.run(fetch(app, "POST", "/", content=b"x" * (MAX_BODY + 1)))
    assert r.status_code == 413 and "request body over 65,536 bytes" in r.text

    async def endless() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(100):
            yield b"y" * 4096

    r = asyncio.run(fetch(app, "POST", "/", content=endless()))
    assert r.status_code == 413
    r = asyncio.run(fetch(app, "POST", "/", content=b"{}"))
    assert r.status_code == 405  # a small body reaches the app, which serves only reads


@pytest.fixture
def served(site: Site) -> Iterator[str]:
    """The real `recallwatch serve` on a free port, with a token from the environment."""
    with serving(["ops", "serve", "--history", str(site[0]), "--port", "0"],
                 r"(http://127\.0\.0\.1:\d+/)\?token=(\S+) ",
                 env={"RECALLWATCH_SERVE_TOKEN": TOKEN}) as (_, found):
        assert found.group(2) == TOKEN
        yield found.group(1)


def test_real_server_checks_host_and_token(served: str, site: Site) -> None:
    wait_up(served)
    last = site[2][-1].run_id
    for host in ("127.evil.example", "127.0.0.1.nip.io"):
        r = httpx.get(served, headers={"host": host}, timeout=60)
        assert r.status_code == 421 and last not in r.text
    assert httpx.get(served + "runs/latest", timeout=60).status_code == 401
    with httpx.Client(timeout=60, follow_redirects=True) as c:
        r = c.get(served + f"runs/latest?token={TOKEN}")
        assert r.status_code == 200 and last in r.text and "token" not in str(r.url)
        assert c.get(served + "trends").status_code == 200
    r = httpx.post(served, content=b"z" * (MAX_BODY * 4), timeout=60,
                   headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 413


async def _asgi(app: Any, headers: list[tuple[bytes, bytes]]) -> tuple[int, str]:
    """One GET / straight through the ASGI interface, with exactly these headers (a client
    library folds or refuses repeated Host headers before they are sent)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "http_version": "1.1", "method": "GET", "path": "/",
             "raw_path": b"/", "query_string": b"", "root_path": "", "scheme": "http",
             "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return int(sent[0]["status"]), body.decode("utf-8")


TWO_HOSTS = "a request with 2 Host headers: a request names its host once (HTTP/1.1, RFC 9112 " \
            "section 3.2)\n"


@pytest.mark.parametrize("second", [b"evil.example", b"127.0.0.1:8000"])
def test_two_host_headers_are_refused_in_process(site: Site, second: bytes) -> None:
    app = create_app(site[0])
    status, text = asyncio.run(_asgi(app, [(b"host", b"127.0.0.1:8000"), (b"host", second)]))
    assert (status, text) == (400, "the dashboard refused " + TWO_HOSTS)
    status, text = asyncio.run(_asgi(app, [(b"host", second), (b"Host", b"localhost")]))
    assert status == 400 and site[2][-1].run_id not in text
    status, text = asyncio.run(_asgi(app, [(b"host", b"127.0.0.1:8000")]))
    assert status == 200 and site[2][-1].run_id in text


def _raw_get(url: str, hosts: list[str]) -> tuple[str, str]:
    """GET / sent byte for byte over a socket: the status line and the body."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    request = (f"GET /?token={TOKEN} HTTP/1.1\r\n" + "".join(f"Host: {h}\r\n" for h in hosts)
               + "Connection: close\r\n\r\n")
    with socket.create_connection((where.hostname, where.port), timeout=60) as s:
        s.sendall(request.encode("ascii"))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode("ascii"), body.decode("utf-8", "replace")


def test_real_server_refuses_two_host_headers(served: str) -> None:
    wait_up(served)
    own = served.split("/")[2]
    for hosts in ([own, "evil.example"], ["evil.example", own], [own, own]):
        status, body = _raw_get(served, hosts)
        assert status == "HTTP/1.1 400 Bad Request", (hosts, status)
        assert body == "the dashboard refused " + TWO_HOSTS
    status, _ = _raw_get(served, [own])  # one Host header: on to the token, which sets a cookie
    assert status == "HTTP/1.1 303 See Other"
