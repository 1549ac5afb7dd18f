"""The answers page (``recallwatch label answers FILE``): label answers in a local
browser — is each faithful to its contexts, relevant to its question, and (when a reference or
facts say what is right) correct.

    from recallwatch.web.answer_labels import create_answers_app
    app = create_answers_app("answers.jsonl", "answers.ana.labels.jsonl", judge="ana", token=t)

The labels go to a labelled answers file as ``gate --answer-labels`` reads it
(:class:`~recallwatch.answers.labelling.AnswerLabels`); the answers already labelled there are
skipped. Its safety (the token, the Host check, the body limit, same-origin writes, the inline
script allowed by its hash, escaped text) is the labelling pages'
(:mod:`recallwatch.web._labelling`). A label names the answer it labels, so a key pressed twice
labels the answer shown, never the next one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recallwatch.answers.gate import ChunkReader
from recallwatch.answers.labelling import (
    AnswerLabels,
    label_problem,
    open_answers_to_label,
)
from recallwatch.formats.golden import GoldenSet
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

__all__ = ["QUESTIONS", "TOKEN_HEADER", "answers_csp", "create_answers_app"]

SCRIPT = page_script("answers.js")
_BODY = "a JSON object {id, faithful, relevant, correct}"
# each label's question, as the page asks it
QUESTIONS = {
    "faithful": "Is everything the answer says in its contexts?",
    "relevant": "Does the answer address the question?",
    "correct": "Does the answer state the right answer (the reference, or the facts)?",
}


def answers_csp() -> str:
    """Only the page's own script runs; it may talk to this server alone."""
    return page_csp(SCRIPT)


def create_answers_app(answers: str | Path, labels: str | Path, *, judge: str, token: str,
                       golden: GoldenSet | None = None,
                       chunks: ChunkReader | None = None) -> Guard:
    """The answers page over ``answers`` (a file of answers to label; with ``golden``, a gate
    answers file whose chunk ids ``chunks`` reads), saving ``judge``'s labels to ``labels``."""
    check_page_token(token, "the answers page")  # before the files are read
    items = open_answers_to_label(answers, golden=golden, chunks=chunks)
    log = AnswerLabels(labels, judge, items)  # an unreadable labels file fails here
    by_id = {i.id: i for i in items}

    def state() -> dict[str, Any]:
        labelled = log.labels()
        return {"labelled": labelled, "count": len(labelled), "total": len(items)}

    def label(data: dict[str, Any]) -> Written:
        item_id = data.get("id")
        if not isinstance(item_id, str) or item_id not in by_id:
            return "id must be the id of the answer shown"
        faithful, relevant, correct = (data.get(k) for k in ("faithful", "relevant", "correct"))
        problem = label_problem(by_id[item_id], faithful, relevant, correct)
        if problem is not None:
            return problem
        log.label(item_id, bool(faithful), bool(relevant),
                  None if correct is None else bool(correct))
        return state()

    def undo() -> dict[str, Any]:
        last = log.undo()
        return {**state(), "undone": None if last is None else last["id"]}

    return labelling_app(LabellingPage(
        what="the answers page", template="answers.html", script=SCRIPT,
        data_id="answers-data", token=token, state=state, write_path="/label", write=label,
        body_expected=_BODY, undo=undo, variables=lambda: {
            "judge": judge, "source": str(answers), "target": str(labels),
            "questions": QUESTIONS,
            "data": {"items": [{**i.to_dict(), "has_truth": i.has_truth} for i in items]}}))
