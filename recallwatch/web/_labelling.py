"""What the labelling pages share: the judging page (``recallwatch label serve``, grades of a
judging queue, :mod:`recallwatch.web.judge`) and the answers page (``recallwatch label
answers``, labels of answers, :mod:`recallwatch.web.answer_labels`).

Safety, since a page writes files and shows a knowledge base's text:

* every request needs the session's token (``?token=`` on the page, the ``X-Judge-Token`` header
  on writes): another local user or a web page in the same browser cannot read or write;
* the Host header must name a loopback address exactly (a DNS-rebinding page cannot reach the
  server under its own name), a body over 64 KB is refused unread, and a write from another
  origin is refused (:mod:`recallwatch.web._guard`, shared with the dashboard);
* a write names the item it labels, so a key pressed twice labels the item shown, never the
  next one the person has not seen yet;
* the page loads nothing from anywhere (its style and script are inline, the script allowed by
  its hash in the Content-Security-Policy) and every text is escaped.

A page is a :class:`LabellingPage`: its template (which extends ``labelling.html``), its script
(``static/labelling.js`` then its own), and four functions — its state, a write, an undo and the
template's variables. :func:`labelling_app` serves it: ``GET /`` the page, ``GET /state``, ``POST
WRITE`` and ``POST /undo``, each answering with the state as the server saved it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from recallwatch.errors import UsageError
from recallwatch.report.html import environment
from recallwatch.web._guard import LOOPBACK_HOSTS, Guard

__all__ = ["TOKEN_HEADER", "LabellingPage", "Written", "check_page_token", "json_object",
           "labelling_app", "page_csp", "page_script"]

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
TOKEN_HEADER = "X-Judge-Token"
_COMMON_SCRIPT = (HERE / "static" / "labelling.js").read_text(encoding="utf-8")


def page_script(name: str) -> str:
    """A page's one inline script: the shared part, then ``static/NAME``."""
    return _COMMON_SCRIPT + "\n" + (HERE / "static" / name).read_text(encoding="utf-8")


def page_csp(script: str) -> str:
    """Only the page's own script runs; it may talk to this server alone."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


Written = dict[str, Any] | str  # the new state, or what is wrong with the request


@dataclass(frozen=True)
class LabellingPage:
    """One labelling page (see the module)."""

    what: str  # "the judging page": names the page in refusals
    template: str
    script: str
    data_id: str  # the id of the page's JSON data element
    token: str
    variables: Callable[[], dict[str, Any]]  # the template's; "data" is completed here
    state: Callable[[], dict[str, Any]]
    write_path: str  # "/grade"
    write: Callable[[dict[str, Any]], Written]
    body_expected: str  # "a JSON object {query_id, id, grade}"
    undo: Callable[[], dict[str, Any]]


def json_object(body: bytes) -> dict[str, Any] | None:
    """A request body's JSON object, or None when it is not one."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def check_page_token(token: str, what: str) -> None:
    if len(token) < 16:
        raise UsageError(f"{what}'s token must be at least 16 characters")


def labelling_app(page: LabellingPage) -> Guard:
    """``page`` served behind its token and :class:`~recallwatch.web._guard.Guard`."""
    check_page_token(page.token, page.what)
    env = environment(TEMPLATES)
    headers = {"Content-Security-Policy": page_csp(page.script),
               "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
               "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

    def refused(request: Request, *, write: bool) -> Response | None:
        given = (request.headers.get(TOKEN_HEADER) if write
                 else request.query_params.get("token")) or ""
        if not hmac.compare_digest(given.encode(), page.token.encode()):
            return JSONResponse({"error": "missing or wrong token: open the address the "
                                 "command printed when it started"}, 403, headers=headers)
        origin = request.headers.get("origin")
        if write and origin is not None and urlsplit(origin).netloc != request.headers.get(
                "host"):
            return JSONResponse({"error": "writes from another origin are refused"}, 403,
                                headers=headers)
        return None

    def show(request: Request) -> Response:
        if (no := refused(request, write=False)) is not None:
            return no
        variables = page.variables()
        data = {**variables.pop("data", {}), "state": page.state(), "token": page.token,
                "header": TOKEN_HEADER}
        html = env.get_template(page.template).render(
            **variables, data=data, data_id=page.data_id, script=page.script)
        return HTMLResponse(html, headers=headers)

    async def write(request: Request) -> Response:
        if (no := refused(request, write=True)) is not None:
            return no
        data = json_object(await request.body())
        out = (f"the body must be {page.body_expected}" if data is None else page.write(data))
        if isinstance(out, str):
            return JSONResponse({"error": out}, 400, headers=headers)
        return JSONResponse(out, headers=headers)

    async def undo(request: Request) -> Response:
        if (no := refused(request, write=True)) is not None:
            return no
        return JSONResponse(page.undo(), headers=headers)

    async def current(request: Request) -> Response:
        if (no := refused(request, write=False)) is not None:
            return no
        return JSONResponse(page.state(), headers=headers)

    site = Starlette(routes=[
        Route("/", show), Route("/state", current),
        Route(page.write_path, write, methods=["POST"]), Route("/undo", undo, methods=["POST"]),
    ])
    return Guard(site, names=LOOPBACK_HOSTS, what=page.what)
