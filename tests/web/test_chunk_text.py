"""The dashboard shows each chunk's recorded text beside its id — expected chunks, the top-K,
"buried by" — escaped, and an old run recorded without texts still renders, by id alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
from starlette.testclient import TestClient

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import EXCERPT_CHARS, GateResult, excerpt
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.formats.results import RankedList
from recallwatch.history import History, compare_runs
from recallwatch.report import visible
from recallwatch.report.html import to_html
from recallwatch.stores.base import Chunk
from recallwatch.web import create_app
from tests.report import helpers as H

N_NEW = 9  # chunks ingested between the two runs, ranked 2..10 above each query's second chunk


def text_of(cid: str) -> str:
    """A hostile text, distinct per chunk, longer than the excerpt (so it is cut)."""
    return f"text of {cid}\n\t{H.XSS[len(cid) % len(H.XSS)]} " + "filler words " * 40


def golden() -> GoldenSet:
    return GoldenSet.from_dict({"name": "texts", "version": "1", "top_k": 10, "queries": [
        {"id": H.hostile(i, "q"), "text": H.hostile(i, "question "),
         "expected": [H.hostile(i, "a"), H.hostile(i, "b")]} for i in range(3)]})


def run(g: GoldenSet, buried: bool) -> GateResult:
    """Both expected chunks at ranks 1 and 2; when ``buried``, new chunks push the second one of
    the first query to rank 11."""
    results, corpus = {}, {}
    for i, q in enumerate(g.queries):
        a, b = q.expected
        others = [f"other-{i}-{r} {H.XSS[r % len(H.XSS)]}" for r in range(20)]
        new = [f"new-{i}-{r} {H.XSS[r % len(H.XSS)]}" for r in range(N_NEW)]
        ids = [a, *new, b, *others] if buried and i == 0 else [a, b, *others]
        results[q.id] = RankedList(ids, np.linspace(0.95, 0.95 - 0.01 * (len(ids) - 1),
                                                    len(ids)))
        corpus.update({c: Chunk(id=c, text=text_of(c)) for c in [a, b, *others, *new]})
    return run_gate(g, results=results, corpus=corpus, policy=Policy(noise_ceiling=0.9))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GateResult, GateResult]:
    g = golden()
    base, now = run(g, False), run(g, True)
    since = {c for c in now.chunk_texts if c.startswith("new-")}
    assert not base.failing() and len(now.failing()) == 1
    now = replace(now, comparison={"previous": compare_runs(base, now, ingested_since=since),
                                   "last_accepted": None})
    # the same run as a history written before runs kept texts: no chunk_texts key at all
    old_dict = now.to_dict()
    old_dict["run_id"] += "-old"
    del old_dict["chunk_texts"]
    old = GateResult.from_dict(old_dict)
    db = tmp_path_factory.mktemp("texts") / "history.db"
    with History(db) as h:
        for r in (base, now, old):
            h.record(r)
    return db, now, old


@pytest.fixture(scope="module")
def client(site: tuple[Path, GateResult, GateResult]) -> TestClient:
    return TestClient(base_url="http://127.0.0.1", app=create_app(site[0]))


def page(client: TestClient, url: str) -> Any:
    r = client.get(url)
    assert r.status_code == 200, (url, r.text[-500:])
    H.assert_inert(r.text)  # chunk text is hostile input: shown, never obeyed
    return H.parse(r.text)


def shown_text(cid: str) -> str:
    return " ".join(visible(excerpt(text_of(cid))).split())


def beside(cell: Any) -> tuple[str, str | None]:
    """(the chunk id, the excerpt beside it) of the first chunk in ``cell``."""
    texts = cell.cssselect(".chunk-text")
    return H.text(cell.cssselect("code.chunk-id")[0]), H.text(texts[0]) if texts else None


def query_url(r: GateResult, qid: str) -> str:
    return f"/runs/{quote(r.run_id, safe='')}/queries/{quote(qid, safe='')}"


def test_excerpt_is_bounded_and_recorded_once_per_chunk() -> None:
    r = run(golden(), True)
    shown = {c for q in r.queries
             for c in [*(h.id for h in q.expected), *(c for c, _ in [*q.top, *q.beyond_k])]}
    assert set(r.chunk_texts) == shown
    for cid, t in r.chunk_texts.items():
        assert len(t) == EXCERPT_CHARS and t.endswith("…")
        assert " ".join(text_of(cid).split()).startswith(t[:-1])
    assert GateResult.from_dict(r.to_dict()).chunk_texts == r.chunk_texts  # the JSON round-trips


def test_expected_chunks_and_top_k_show_their_text_beside_the_id(
        client: TestClient, site: tuple[Path, GateResult, GateResult]) -> None:
    now = site[1]
    for q in now.queries:
        d = page(client, query_url(now, q.id)).cssselect("details.query")[0]
        rows = d.cssselect("table.expected tbody tr")
        assert [beside(r.cssselect("td")[0]) for r in rows] == \
            [(" ".join(h.id.split()), shown_text(h.id)) for h in q.expected]
        rows = d.cssselect("table.topk tbody tr:not(.threshold)")
        assert [beside(r.cssselect("td")[1]) for r in rows] == \
            [(" ".join(c.split()), shown_text(c)) for c, _ in q.top]
        assert not d.cssselect(".no-text")


def test_buried_by_names_the_new_chunks_with_their_text(
        client: TestClient, site: tuple[Path, GateResult, GateResult]) -> None:
    now = site[1]
    failing = now.failing()[0]
    buried = now.comparison["previous"]["buried_by"][failing.id]  # type: ignore[index]
    assert len(buried) == N_NEW
    d = page(client, query_url(now, failing.id)).cssselect("details.query")[0]
    item = next(li for li in d.cssselect("li") if H.text(li).startswith("buried by"))
    ids = [H.text(c) for c in item.cssselect("code.chunk-id")]
    assert ids == [" ".join(b["id"].split()) for b in buried]
    assert [H.text(t) for t in item.cssselect(".chunk-text")] == \
        [shown_text(b["id"]) for b in buried]


def test_the_run_page_and_the_report_show_the_same_texts(
        client: TestClient, site: tuple[Path, GateResult, GateResult]) -> None:
    now = site[1]
    ours = page(client, f"/runs/{quote(now.run_id, safe='')}").cssselect(".chunk-text")
    report = H.parse(to_html(now))
    H.assert_inert(to_html(now))
    assert [H.text(t) for t in ours] == [H.text(t) for t in report.cssselect(".chunk-text")]
    assert len(ours) > sum(len(q.expected) + len(q.top) for q in now.queries)


def test_an_old_run_without_texts_shows_the_ids_with_a_note(
        client: TestClient, site: tuple[Path, GateResult, GateResult]) -> None:
    old = site[2]
    assert not old.chunk_texts
    for q in old.queries:
        d = page(client, query_url(old, q.id)).cssselect("details.query")[0]
        assert "recorded no chunk text" in H.text(d.cssselect(".no-text")[0])
        assert not d.cssselect(".chunk-text")
        assert [H.text(c) for c in d.cssselect("table.expected code.chunk-id")] == \
            [" ".join(h.id.split()) for h in q.expected]
