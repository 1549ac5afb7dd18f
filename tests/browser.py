"""What the browser tests share: Debian's chromium (nothing is downloaded by playwright), the
flags it runs with here, the mark that skips a test without it, and a dashboard served for real
on 127.0.0.1 (uvicorn in a thread, on a free port)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason=f"{CHROMIUM} is not installed (run `make browser`)")


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium, headless, driven by playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()


@contextmanager
def opened(url: str, *, width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A page at ``url`` in a ``width`` x ``height`` window, loaded; ``page.errors`` collects
    its script errors and console errors."""
    with chromium() as b:
        page = b.new_context(viewport={"width": width, "height": height}).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url)
        page.wait_for_load_state("load")
        page.errors = errors
        yield page


def press(page: Any, key: str) -> None:
    """Press ``key`` once a labelling page takes keys again: the last answer is in and what is
    shown has settled (the page ignores keys until then, against double presses)."""
    page.wait_for_selector('body[data-ready="1"][data-pending="0"]', state="attached")
    page.keyboard.press(key)


@contextmanager
def served(app: Any) -> Iterator[str]:
    """``app`` answering on 127.0.0.1 at a free port: its base URL, stopped when the block ends."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the dashboard did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
