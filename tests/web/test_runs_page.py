"""The run list: paged (never silently only the newest runs), the page size in the query string
and capped, and the run each store serves in production marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from lxml import html
from starlette.testclient import TestClient

from recallwatch.history import History, record_gate_run
from recallwatch.ops.promote import promote
from recallwatch.web import create_app
from recallwatch.web._runs import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, page_numbers
from tests.history.helpers import KB, gate_run, golden_set, kb
from tests.report import helpers as H

__all__ = ["kb"]  # the fixture

N_RUNS = 23


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("runs") / "h.db"
    g, other = golden_set(2), golden_set(2, name="other")
    for i in range(N_RUNS):
        record_gate_run(gate_run(other if i % 4 == 3 else g), db)
    return db


def get(client: TestClient, url: str) -> Any:
    r = client.get(url)
    assert r.status_code == 200, r.text
    return html.fromstring(r.text)


def shown(doc: Any) -> list[str]:
    return [H.text(a) for a in doc.cssselect("#runs-table a.run-link")]


def test_pages_cover_every_run_once_newest_first(history: Path) -> None:
    client = TestClient(base_url="http://127.0.0.1", app=create_app(history))
    with History(history) as h:
        every = [r.run_id for r in h.runs()]  # the whole history, newest first
        assert [r.run_id for r in h.runs(limit=5, offset=5)] == every[5:10]
        assert [r.run_id for r in h.runs(offset=20)] == every[20:]
        assert h.count_runs() == len(every) == N_RUNS
        assert h.count_runs(dataset="other") == len(h.runs(dataset="other")) > 0
        assert h.dataset_names() == sorted({r.dataset_name for r in h.runs()})
    seen: list[str] = []
    url = "/?size=10"
    counts = []
    while url:
        doc = get(client, url)
        seen += shown(doc)
        counts.append(H.text(doc.cssselect(".pager.top .count")[0]))
        nxt = doc.cssselect(".pager.top a.next")
        url = nxt[0].get("href") if nxt else ""
    assert seen == every
    assert counts == [f"runs 1–10 of {N_RUNS} · page 1 of 3",
                      f"runs 11–20 of {N_RUNS} · page 2 of 3",
                      f"runs 21–{N_RUNS} of {N_RUNS} · page 3 of 3"]
    # previous goes back one page, keeping the size
    doc = get(client, "/?size=10&page=3")
    prev = doc.cssselect(".pager.bottom a.prev")[0].get("href")
    assert parse_qs(urlsplit(prev).query) == {"page": ["2"], "size": ["10"]}
    assert shown(get(client, prev)) == every[10:20]
    assert not doc.cssselect(".pager a.next")
    # a page past the end shows the last page, never an empty list
    assert shown(get(client, "/?size=10&page=99")) == every[20:]


def test_the_page_size_is_capped_and_defaults(history: Path) -> None:
    assert page_numbers(None, None) == (1, DEFAULT_PAGE_SIZE)
    assert page_numbers("2", str(10 * MAX_PAGE_SIZE)) == (2, MAX_PAGE_SIZE)
    assert page_numbers("-4", "0") == (1, 1)
    assert page_numbers("two", "many") == (1, DEFAULT_PAGE_SIZE)
    client = TestClient(base_url="http://127.0.0.1", app=create_app(history))
    assert len(shown(get(client, "/?size=junk"))) == N_RUNS  # the default page holds them all
    assert len(shown(get(client, "/?size=5"))) == 5


def test_paging_within_one_dataset(history: Path) -> None:
    client = TestClient(base_url="http://127.0.0.1", app=create_app(history))
    with History(history) as h:
        wanted = [r.run_id for r in h.runs(dataset="other")]
    doc = get(client, "/?dataset=other&size=4")
    assert shown(doc) == wanted[:4]
    assert H.text(doc.cssselect(".pager.top .count")[0]).startswith(f"runs 1–4 of {len(wanted)}")
    nxt = doc.cssselect(".pager.top a.next")[0].get("href")
    assert parse_qs(urlsplit(nxt).query)["dataset"] == ["other"]
    assert shown(get(client, nxt)) == wanted[4:8]


def test_the_run_in_production_is_marked(kb: KB, tmp_path: Path) -> None:
    """The accepted run that allowed the store's latest promotion is marked "in production";
    an older promoted run is not, nor does a refused promotion move the mark."""
    db = tmp_path / "h.db"
    def marks() -> dict[str, str]:
        doc = get(TestClient(base_url="http://127.0.0.1", app=create_app(db)), "/")
        return {H.text(r.cssselect("a.run-link")[0]): H.text(r.cssselect(".badge.prod")[0])
                for r in doc.cssselect("#runs-table tbody tr") if r.cssselect(".badge.prod")}

    first = record_gate_run(kb.gate(), db)
    assert marks() == {}  # gated, not promoted yet
    with History(db) as h:
        assert promote(h, kb.store).promoted
    assert marks() == {first.run_id: "in production"}
    kb.ingest([{"id": "nota_extra", "text": "Nota general extra", "domain": "general"}], "more")
    second = record_gate_run(kb.gate(), db)
    with History(db) as h:
        assert promote(h, kb.store).accepted_run == second.run_id
    record_gate_run(gate_run(golden_set(2)), db)  # another dataset, never promoted
    assert marks() == {second.run_id: "in production"}  # the first one's version was replaced
    # a refused promotion changes nothing
    kb.ingest([{"id": "nota_late", "text": "Nota general tardía", "domain": "general"}], "late")
    with History(db) as h:
        assert not promote(h, kb.store).promoted  # the new version was never gated
    assert marks() == {second.run_id: "in production"}
