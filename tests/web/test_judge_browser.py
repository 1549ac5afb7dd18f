"""Judging a real queue (the example knowledge base pooled with BM25) in headless Chromium with
the keyboard only: grades, undo, the server killed mid-way (SIGKILL) and served again, and the
judgments file checked line by line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recallwatch.formats.judging import read_judgment_records, read_queue, write_queue
from recallwatch.judgments.pool import pool_from_files
from tests.browser import CHROMIUM, chromium, press

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
N = 32

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason=f"{CHROMIUM} is not installed (run `make browser`)"),
]


def grade_of(i: int) -> int:
    return (i * 7 + 3) % 4  # every grade used, in no simple order


@pytest.fixture
def queue(tmp_path: Path) -> Path:
    pool, _ = pool_from_files(KB / "golden.yaml", bm25=KB / "corpus_v1.jsonl", depth=2)
    path = tmp_path / "queue.jsonl"
    write_queue(path, pool.items[:N])
    return path


def serve(queue: Path) -> tuple[subprocess.Popen[str], str]:
    """`recallwatch label serve` in its own process (so it can be killed), on a free port."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from recallwatch.cli import main; main()", "label", "serve",
         str(queue), "--judge", "ana", "--port", "0"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", line)
        if found:
            return proc, found.group(1)
    raise AssertionError(f"the judging page did not start (exit {proc.wait()})")


def stop(proc: subprocess.Popen[str], sig: int) -> None:
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert proc.stderr is not None
    proc.stderr.close()


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b



def test_judge_a_queue_with_the_keyboard_kill_and_resume(queue: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    items = read_queue(queue)
    saved = queue.with_name("queue.ana.judgments.jsonl")
    page = browser.new_page()
    page.set_default_timeout(15_000)
    proc, url = serve(queue)
    try:
        page.goto(url)
        expect(page.locator("#progress")).to_have_text(f"0 / {N} judged")
        expect(page.locator("#chunk-id")).to_have_text(items[0].id)
        expect(page.locator("#query")).to_have_text(items[0].query)
        for i in range(20):
            press(page, str(grade_of(i)))
        expect(page.locator("#progress")).to_have_text(f"20 / {N} judged")
        press(page, "u")  # take back the 20th grade: that pair is shown again
        expect(page.locator("#progress")).to_have_text(f"19 / {N} judged")
        expect(page.locator("#chunk-id")).to_have_text(items[19].id)
        press(page, str(grade_of(19)))
        expect(page.locator("#progress")).to_have_text(f"20 / {N} judged")
        expect(page.locator("#chunk-id")).to_have_text(items[20].id)
    finally:
        stop(proc, signal.SIGKILL)
    # killed without warning: the file holds every grade the page showed as saved
    records = read_judgment_records(saved)
    assert [(r["query_id"], r["id"], r["grade"]) for r in records] == [
        (items[i].query_id, items[i].id, grade_of(i)) for i in range(20)]

    proc, url = serve(queue)
    try:
        page.goto(url)
        expect(page.locator("#progress")).to_have_text(f"20 / {N} judged")
        expect(page.locator("#chunk-id")).to_have_text(items[20].id)  # resumes where it was
        for i in range(20, N):
            press(page, str(grade_of(i)))
        expect(page.locator("#progress")).to_have_text(f"{N} / {N} judged")
        expect(page.locator("#finished")).to_be_visible()
        expect(page.locator("#pair")).to_be_hidden()
    finally:
        stop(proc, signal.SIGINT)
    records = read_judgment_records(saved)
    assert {(r["query_id"], r["id"]): r["grade"] for r in records} == {
        items[i].pair: grade_of(i) for i in range(N)}
    assert {r["judge"] for r in records} == {"ana"} and {r["source"] for r in records} == {
        "human"}
    stamps = [r["at"] for r in records]
    assert stamps == sorted(stamps)  # saved in the order judged


# Two key presses in one go, then one the instant the next pair is drawn: all in the page's own
# event loop, so nothing here depends on how fast the server or the machine is.
DOUBLE_PRESS = """() => new Promise((resolve) => {
  const key = (k) => document.dispatchEvent(new KeyboardEvent("keydown", {key: k}));
  const shown = document.getElementById("chunk-id");
  const before = shown.textContent;
  new MutationObserver((_, observer) => {
    if (shown.textContent === before) {
      return;  // the same pair drawn again (a redraw while the grade is sent)
    }
    observer.disconnect();
    key("3");  // the next pair was drawn a moment ago: not seen yet, ignored
    resolve(shown.textContent);
  }).observe(shown, {childList: true, characterData: true, subtree: true});
  key("2");
  key("2");
})"""


def test_a_double_key_press_grades_only_the_pair_shown(queue: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    items = read_queue(queue)
    saved = queue.with_name("queue.ana.judgments.jsonl")
    page = browser.new_page()
    page.set_default_timeout(15_000)
    proc, url = serve(queue)
    try:
        page.goto(url)
        page.wait_for_selector('body[data-ready="1"]', state="attached")
        assert page.evaluate(DOUBLE_PRESS) == items[1].id
        expect(page.locator("#progress")).to_have_text(f"1 / {N} judged")
        press(page, "0")  # once settled, the next pair takes keys
        expect(page.locator("#progress")).to_have_text(f"2 / {N} judged")
        expect(page.locator("#chunk-id")).to_have_text(items[2].id)
    finally:
        stop(proc, signal.SIGINT)
    assert [(r["id"], r["grade"]) for r in read_judgment_records(saved)] == [
        (items[0].id, 2), (items[1].id, 0)]
