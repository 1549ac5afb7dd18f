"""The judging page (``recallwatch label serve``): grade a judging queue in a local browser.

    from recallwatch.web.judge import create_judge_app
    app = create_judge_app("queue.jsonl", "queue.ana.judgments.jsonl", judge="ana", token=t)

Safety, since the page writes files and shows a knowledge base's text:

* every request needs the session's token (``?token=`` on the page, the ``X-Judge-Token`` header
  on writes): another local user or a web page in the same browser cannot read or write;
* the Host header must name a loopback address exactly (a DNS-rebinding page cannot reach the
  server under its own name), a body over 64 KB is refused unread, and a write from another
  origin is refused (:mod:`recallwatch.web._guard`, shared with the dashboard);
* a grade names the pair it grades, so a key pressed twice grades the pair shown, never the
  next one the judge has not seen yet;
* the page loads nothing from anywhere (its style and script are inline, the script allowed by
  its hash in the Content-Security-Policy) and every text is escaped.
"""

from __future__ import annotations

import hmac
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from recallwatch.errors import UsageError
from recallwatch.formats.judging import GRADE_WORDS, read_queue
from recallwatch.judgments.judging import JudgmentLog
from recallwatch.report.html import environment
from recallwatch.web._guard import LOOPBACK_HOSTS, Guard

__all__ = ["TOKEN_HEADER", "create_judge_app", "judge_csp"]

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
SCRIPT = (HERE / "static" / "judge.js").read_text(encoding="utf-8")
TOKEN_HEADER = "X-Judge-Token"


def judge_csp() -> str:
    """Only the page's own script runs; it may talk to this server alone."""
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


def _grade_request(body: bytes) -> tuple[str, str, int] | str:
    """(query id, chunk id, grade) of a grade request's body, or what is wrong with it."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "the body must be a JSON object {query_id, id, grade}"
    if not isinstance(data, dict):
        return "the body must be a JSON object {query_id, id, grade}"
    query_id, chunk_id, value = data.get("query_id"), data.get("id"), data.get("grade")
    if not isinstance(query_id, str) or not isinstance(chunk_id, str):
        return "query_id and id must be the strings of the pair shown"
    if type(value) is not int or value not in GRADE_WORDS:
        return "a grade is 0, 1, 2 or 3"
    return query_id, chunk_id, value


def create_judge_app(queue: str | Path, judgments: str | Path, *, judge: str,
                     token: str) -> Guard:
    """The judging page over ``queue``, saving ``judge``'s grades to ``judgments``."""
    if len(token) < 16:
        raise UsageError("the judging page's token must be at least 16 characters")
    items = read_queue(queue)
    log = JudgmentLog(judgments, judge)  # an unreadable judgments file fails here, not mid-way
    in_queue = {i.pair for i in items}
    env = environment(TEMPLATES)
    headers = {"Content-Security-Policy": judge_csp(), "X-Content-Type-Options": "nosniff",
               "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
               "Cache-Control": "no-store"}

    def refused(request: Request, *, write: bool) -> Response | None:
        given = (request.headers.get(TOKEN_HEADER) if write
                 else request.query_params.get("token")) or ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            return JSONResponse({"error": "missing or wrong token: open the address "
                                 "`recallwatch label serve` printed"}, 403, headers=headers)
        origin = request.headers.get("origin")
        if write and origin is not None and urlsplit(origin).netloc != request.headers.get(
                "host"):
            return JSONResponse({"error": "writes from another origin are refused"}, 403,
                                headers=headers)
        return None

    def state() -> dict[str, Any]:
        grades = log.grades()
        return {"judged": {f"{q}\u0000{c}": g for (q, c), g in grades.items()
                           if (q, c) in in_queue},
                "count": sum(1 for p in grades if p in in_queue), "total": len(items)}

    def page(request: Request) -> Response:
        if (no := refused(request, write=False)) is not None:
            return no
        html = env.get_template("judge.html").render(
            judge=judge, queue=str(queue), judgments=str(judgments), script=SCRIPT,
            data={"items": [i.to_dict() for i in items], "state": state(), "token": token,
                  "header": TOKEN_HEADER, "grades": GRADE_WORDS})
        return HTMLResponse(html, headers=headers)

    async def grade(request: Request) -> Response:
        if (no := refused(request, write=True)) is not None:
            return no
        parsed = _grade_request(await request.body())
        if isinstance(parsed, str):
            return JSONResponse({"error": parsed}, 400, headers=headers)
        query_id, chunk_id, value = parsed
        if (query_id, chunk_id) not in in_queue:
            return JSONResponse({"error": "this pair is not in the queue"}, 400, headers=headers)
        log.grade(query_id, chunk_id, value)
        return JSONResponse(state(), headers=headers)

    async def undo(request: Request) -> Response:
        if (no := refused(request, write=True)) is not None:
            return no
        last = log.undo()
        out = state()
        out["undone"] = None if last is None else {"query_id": last["query_id"], "id": last["id"]}
        return JSONResponse(out, headers=headers)

    async def current(request: Request) -> Response:
        if (no := refused(request, write=False)) is not None:
            return no
        return JSONResponse(state(), headers=headers)

    site = Starlette(routes=[
        Route("/", page), Route("/state", current), Route("/grade", grade, methods=["POST"]),
        Route("/undo", undo, methods=["POST"]),
    ])
    return Guard(site, names=LOOPBACK_HOSTS, what="the judging page")
