"""Labelling answers in headless Chromium with the keyboard only: y/n answer the highlighted
question, the labels are saved once each question is answered (correct only for an answer with
a reference), u takes back; the file written is what `gate --answer-labels` reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recallwatch.formats.answers import read_labelled_answers
from recallwatch.web.answer_labels import create_answers_app
from tests.answers.conftest import LABELS, write_jsonl
from tests.browser import CHROMIUM, chromium, press, served

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason=f"{CHROMIUM} is not installed (run `make browser`)"),
]
TOKEN = "Tok3n-for.the~answers_0123"


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b



def test_label_answers_with_the_keyboard(tmp_path: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    rows = [json.loads(x) for x in LABELS.read_text(encoding="utf-8").splitlines()][:3]
    rows[2] = {k: v for k, v in rows[2].items() if k not in ("reference", "correct")}
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {k: v for k, v in r.items() if k not in ("faithful", "relevant", "correct")}
        for r in rows])
    out = tmp_path / "labels.jsonl"
    page = browser.new_page()
    page.set_default_timeout(15_000)
    with served(create_answers_app(answers, out, judge="ana", token=TOKEN)) as url:
        page.goto(f"{url}/?token={TOKEN}")
        expect(page.locator("#progress")).to_have_text("0 / 3 labelled")
        expect(page.locator("#answer-id")).to_have_text(rows[0]["id"])
        expect(page.locator("#answer")).to_have_text(rows[0]["answer"])
        expect(page.locator("#contexts li")).to_have_count(len(rows[0]["contexts"]))
        expect(page.locator("#truth-items")).to_have_text(rows[0]["reference"])
        expect(page.locator(".ask.current")).to_have_attribute("data-question", "faithful")
        for key in "yny":  # faithful yes, relevant no (taken back), relevant yes
            press(page, key)
            if key == "n":
                press(page, "u")
                expect(page.locator(".ask.current")).to_have_attribute("data-question",
                                                                       "relevant")
        press(page, "n")  # correct: no; the answer's labels are saved
        expect(page.locator("#progress")).to_have_text("1 / 3 labelled")
        expect(page.locator("#answer-id")).to_have_text(rows[1]["id"])
        press(page, "u")  # nothing given to this answer: takes back the saved labels
        expect(page.locator("#progress")).to_have_text("0 / 3 labelled")
        expect(page.locator("#answer-id")).to_have_text(rows[0]["id"])
        for key in "yyn" + "nyn":
            press(page, key)
        expect(page.locator("#answer-id")).to_have_text(rows[2]["id"])
        expect(page.locator('.ask[data-question="correct"]')).to_be_hidden()
        expect(page.locator("#truth")).to_be_hidden()
        for key in "yy":
            press(page, key)
        expect(page.locator("#progress")).to_have_text("3 / 3 labelled")
        expect(page.locator("#finished")).to_be_visible()
    labelled = read_labelled_answers(out)
    assert [(a.id, a.faithful, a.relevant, a.correct) for a in labelled] == [
        (rows[0]["id"], True, True, False), (rows[1]["id"], False, True, False),
        (rows[2]["id"], True, True, None)]
