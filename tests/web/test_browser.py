"""The dashboard and the HTML report in a real headless Chromium (Debian's ``chromium``, installed
by ``make browser``): clicking through run and query, sorting and filtering, and no planted
script ever running — with the Content-Security-Policy bypassed, so escaping alone is tested."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from recallwatch.acceptance.model import GateResult
from recallwatch.report.html import to_html
from recallwatch.web import create_app
from tests.browser import CHROMIUM, chromium, served
from tests.report import helpers as H

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason=f"{CHROMIUM} is not installed (run `make browser`)"),
]

Site = tuple[Path, Path, list[GateResult]]


@pytest.fixture(scope="module")
def base_url(site: Site) -> Iterator[str]:
    """The dashboard on 127.0.0.1, a free port, uvicorn in a thread."""
    db, bench, _ = site
    with served(create_app(db, bench=bench)) as url:
        yield url


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as _expect

    return _expect(locator)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


class Watch:
    """A page with everything that would show a payload running recorded."""

    def __init__(self, browser: Any, *, bypass_csp: bool = True) -> None:
        self.context = browser.new_context(bypass_csp=bypass_csp,
                                           viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(10_000)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def assert_clean(self) -> None:
        assert self.page.evaluate("window.__pwned") is None
        assert self.page.title() != "pwned"  # what every payload would set
        assert self.page.evaluate("parent === window")  # not framed by a planted iframe
        assert self.dialogs == [] and self.errors == []

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watch(browser: Any) -> Iterator[Watch]:
    w = Watch(browser)
    yield w
    w.close()


def test_click_into_a_run_and_a_query(watch: Watch, base_url: str, site: Site) -> None:
    runs = site[2]
    latest = runs[-1]
    page = watch.page
    page.goto(base_url + "/")
    assert page.title() == "recallwatch — runs"
    page.locator("a.run-link").first.click()
    page.wait_for_selector("#verdict")
    assert page.locator("code.run-id").inner_text() == latest.run_id
    assert page.locator("#verdict .verdict").inner_text() == latest.verdict

    failing = latest.failing()[0]
    index = latest.queries.index(failing)
    page.locator("#query-table tr.failing a.qlink").first.click()
    details = page.locator(f"details#q-{index}")
    # the drill-down is opened by the hashchange handler, after the click returns
    expect(details).to_have_attribute("open", "")
    expect(details.locator("table.topk")).to_be_visible()
    assert details.locator("code.qid").inner_text() == failing.id
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-run-query.png"))

    details.locator("a.permalink").click()
    page.wait_for_selector("h1 code")
    assert page.locator("h1 code").inner_text() == failing.id
    assert urlsplit(page.url).path == f"/runs/{latest.run_id}/queries/{quote(failing.id, safe='')}"
    assert page.locator("table.topk tr.noise").count() == failing.noise
    page.screenshot(path=str(ARTIFACTS / "dashboard-query.png"), full_page=True)
    assert (ARTIFACTS / "dashboard-query.png").stat().st_size > 10_000
    watch.assert_clean()


def _visible_values(page: Any, column: int) -> list[float]:
    cells = page.locator(f"#query-table tbody tr:not(.hidden) td:nth-child({column})")
    return [float(v) for v in cells.evaluate_all("cs => cs.map(c => c.dataset.v)")]


def test_sort_and_filter_the_query_table(watch: Watch, base_url: str, site: Site) -> None:
    latest = site[2][-1]
    page = watch.page
    page.goto(f"{base_url}/runs/{latest.run_id}")
    page.locator("#query-table th", has_text="recall").click()
    assert _visible_values(page, 4) == sorted(q.recall for q in latest.queries)
    page.locator("#query-table th", has_text="recall").click()
    assert _visible_values(page, 4) == sorted((q.recall for q in latest.queries), reverse=True)

    page.select_option(".filters select[name=status]", "fail")
    assert page.locator("#query-table tbody tr:not(.hidden)").count() == len(latest.failing())
    assert page.locator(".filters .count").inner_text() == \
        f"{len(latest.failing())} of {len(latest.queries)} queries"
    page.select_option(".filters select[name=status]", "")
    # the free-text filter matches a planted string literally, as text
    needle = latest.queries[1].id
    page.fill(".filters input[type=search]", needle)
    shown = page.locator("#query-table tbody tr:not(.hidden) code").all_inner_texts()
    assert shown == [q.id for q in latest.queries if needle.lower() in
                     " ".join([q.id, q.text, q.domain or ""]).lower()]
    watch.assert_clean()


def test_no_planted_string_runs_on_any_page(watch: Watch, base_url: str, site: Site) -> None:
    runs = site[2]
    urls = ["/", "/trends", "/monitor", "/funnel", "/bench", "/trends?last=3",
            f"/runs/{quote(H.XSS[0], safe='')}",  # the 404 page repeats the reference
            f"/runs/{runs[-1].run_id}/queries/{quote(H.XSS[1], safe='')}"]
    urls += [f"/runs/{r.run_id}" for r in runs]
    urls += [f"/runs/{runs[-1].run_id}/queries/{quote(q.id, safe='')}"
             for q in runs[-1].queries]
    for url in urls:
        watch.page.goto(base_url + url)
        # open every drill-down and hover every plot mark: nothing may react
        watch.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        for mark in watch.page.locator("svg rect, svg circle").all()[:5]:
            mark.hover()
        watch.assert_clean()
    assert all(urlsplit(u).netloc == urlsplit(base_url).netloc for u in watch.requests)


def test_report_file_opens_offline_and_inert(watch: Watch, site: Site,
                                             tmp_path: Path) -> None:
    run = site[2][-1]
    path = tmp_path / "report.html"
    path.write_text(to_html(run), encoding="utf-8")
    # offline: any request leaving the file is refused and recorded
    watch.context.route("**/*", lambda route: route.continue_()
                        if route.request.url.startswith("file:") else route.abort())
    watch.page.goto(path.as_uri())
    assert watch.page.locator("#verdict .verdict").inner_text() == run.verdict
    assert watch.page.locator("figure.chart svg").count() == 3
    assert [u for u in watch.requests if not u.startswith("file:")] == []
    # the table sorts and the drill-down links open in the file too
    watch.page.locator("#query-table th", has_text="quality").click()
    assert _visible_values(watch.page, 5) == sorted(q.quality for q in run.queries)
    link = watch.page.locator("#query-table a.qlink").first
    target = link.get_attribute("href")
    link.click()
    expect(watch.page.locator(f"details{target}")).to_have_attribute("open", "")
    expect(watch.page.locator("details.query[open]")).to_have_count(1)
    watch.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    watch.page.screenshot(path=str(ARTIFACTS / "report.png"))
    watch.assert_clean()


def test_csp_is_enforced_too(browser: Any, site: Site, tmp_path: Path) -> None:
    """Without the bypass, the page's own script still runs (its hash is allowed)."""
    w = Watch(browser, bypass_csp=False)
    try:
        path = tmp_path / "report.html"
        path.write_text(to_html(site[2][-1]), encoding="utf-8")
        w.page.goto(path.as_uri())
        w.page.select_option(".filters select[name=status]", "pass")
        assert w.page.locator(".filters .count").inner_text().endswith("queries")
        w.assert_clean()
    finally:
        w.close()
