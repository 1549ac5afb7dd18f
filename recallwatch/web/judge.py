"""The judging page (``recallwatch label serve``): grade a judging queue in a local browser.

    from recallwatch.web.judge import create_judge_app
    app = create_judge_app("queue.jsonl", "queue.ana.judgments.jsonl", judge="ana", token=t)

Its safety (the token, the Host check, the body limit, same-origin writes, the inline script
allowed by its hash, escaped text) is the labelling pages' (:mod:`recallwatch.web._labelling`).
A grade names the pair it grades, so a key pressed twice grades the pair shown, never the next
one the judge has not seen yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recallwatch.formats.judging import GRADE_WORDS, read_queue
from recallwatch.judgments.judging import JudgmentLog
from recallwatch.web._guard import Guard
from recallwatch.web._labelling import (
    TOKEN_HEADER,
    LabellingPage,
    Written,
    check_page_token,
    labelling_app,
    page_csp,
    page_script,
)

__all__ = ["TOKEN_HEADER", "create_judge_app", "judge_csp"]

SCRIPT = page_script("judge.js")
_BODY = "a JSON object {query_id, id, grade}"


def judge_csp() -> str:
    """Only the page's own script runs; it may talk to this server alone."""
    return page_csp(SCRIPT)


def _grade_request(data: dict[str, Any]) -> tuple[str, str, int] | str:
    """(query id, chunk id, grade) of a grade request, or what is wrong with it."""
    query_id, chunk_id, value = data.get("query_id"), data.get("id"), data.get("grade")
    if not isinstance(query_id, str) or not isinstance(chunk_id, str):
        return "query_id and id must be the strings of the pair shown"
    if type(value) is not int or value not in GRADE_WORDS:
        return "a grade is 0, 1, 2 or 3"
    return query_id, chunk_id, value


def create_judge_app(queue: str | Path, judgments: str | Path, *, judge: str,
                     token: str) -> Guard:
    """The judging page over ``queue``, saving ``judge``'s grades to ``judgments``."""
    check_page_token(token, "the judging page")  # before the files are read
    items = read_queue(queue)
    log = JudgmentLog(judgments, judge)  # an unreadable judgments file fails here, not mid-way
    in_queue = {i.pair for i in items}

    def state() -> dict[str, Any]:
        grades = log.grades()
        return {"judged": {f"{q}\u0000{c}": g for (q, c), g in grades.items()
                           if (q, c) in in_queue},
                "count": sum(1 for p in grades if p in in_queue), "total": len(items)}

    def grade(data: dict[str, Any]) -> Written:
        parsed = _grade_request(data)
        if isinstance(parsed, str):
            return parsed
        query_id, chunk_id, value = parsed
        if (query_id, chunk_id) not in in_queue:
            return "this pair is not in the queue"
        log.grade(query_id, chunk_id, value)
        return state()

    def undo() -> dict[str, Any]:
        last = log.undo()
        out = state()
        out["undone"] = None if last is None else {"query_id": last["query_id"], "id": last["id"]}
        return out

    return labelling_app(LabellingPage(
        what="the judging page", template="judge.html", script=SCRIPT, data_id="judge-data",
        token=token, state=state, write_path="/grade", write=grade, body_expected=_BODY,
        undo=undo, variables=lambda: {
            "judge": judge, "source": str(queue), "target": str(judgments),
            "data": {"items": [i.to_dict() for i in items], "grades": GRADE_WORDS}}))
