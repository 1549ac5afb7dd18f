"""The dashboard's experiments: two real `recallwatch experiment` runs found under the folder the
dashboard is given, and one recorded in the history, listed, and each one's ranked table and
frontier plot shown, as read from its results.json here; in process (Starlette TestClient) and
in a real headless Chromium."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from recallwatch.web import create_app
from recallwatch.web._experiments import experiment_id
from tests.browser import ARGS, CHROMIUM, served
from tests.clirun import cli
from tests.experiment.conftest import small_kb
from tests.report import helpers as H

HOSTILE = '<img src=x onerror="window.ran=1">'
PLAN = ("golden: golden.yaml\ncorpus: corpus.jsonl\npolicy: policy.yaml\n"
        "base: {{name: bm25, retrieval: bm25}}\nvariants:\n{variants}")
FIRST = ("  - {name: sentences, chunking: {method: sentences, size: 200}}\n"
         f"  - {{name: '{HOSTILE}', chunking: {{method: size, size: 400, overlap: 80}}}}\n")
SECOND = "  - {name: paragraphs, chunking: {method: paragraph, size: 2000}}\n"


@pytest.fixture(scope="module")
def experiments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding two experiments' output directories (BM25 variants of the example's
    labour-law questions), a stray JSON file and a broken one."""
    folder = tmp_path_factory.mktemp("exp-site")
    small_kb(folder)
    root = folder / "experiments"
    for name, variants in (("first", FIRST), ("second", SECOND)):
        (folder / f"{name}.yaml").write_text(PLAN.format(variants=variants), encoding="utf-8")
        code, _, stderr = cli("experiment", str(folder / f"{name}.yaml"), "--out-dir",
                              str(root / name))
        assert code == 0, stderr
        shutil.rmtree(root / name / "cache")  # the dashboard reads results.json alone
    (root / "notes").mkdir()
    (root / "notes" / "results.json").write_text('{"hello": 1}', encoding="utf-8")
    (root / "broken").mkdir()
    (root / "broken" / "results.json").write_text("{", encoding="utf-8")
    return root


def _results(root: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / name / "results.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def client(site: tuple[Path, Path, Any], experiments: Path) -> TestClient:
    return TestClient(base_url="http://127.0.0.1",
                      app=create_app(site[0], experiments=[experiments]))


def get(client: TestClient, url: str, status: int = 200) -> Any:
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.text[-500:])
    H.assert_inert(r.text)
    return H.parse(r.text)


def test_the_list_shows_every_experiment_and_skips_what_is_not_one(client: TestClient,
                                                                   experiments: Path) -> None:
    doc = get(client, "/experiments")
    rows = doc.cssselect("table.experiments tbody tr")
    assert len(rows) == 2
    shown = {H.text(r.cssselect("td")[6]): r for r in rows}
    for name in ("first", "second"):
        data = _results(experiments, name)
        row = shown[str((experiments / name).resolve())]
        cells = [H.text(c) for c in row.cssselect("td")]
        assert cells[1] == data["plan"] and cells[2] == str(len(data["variants"]))
        assert cells[3] == data["base"] and cells[4].startswith(data["winner"])
        assert cells[5] == data["chosen_on"] == "tune"
        link = row.cssselect("a")[0].get("href")
        assert link == f"/experiments/{experiment_id(experiments / name / 'results.json')}"
    skipped = H.text(doc.cssselect("ul.small")[0])
    assert "notes" in skipped and "not an experiment's results" in skipped
    assert "broken" in skipped and "unreadable" in skipped
    nav = [(a.get("href"), "here" in (a.get("class") or "")) for a in doc.cssselect("nav.top a")]
    assert ("/experiments", True) in nav


def test_an_experiment_page_is_its_ranked_table_and_frontier(client: TestClient,
                                                             experiments: Path) -> None:
    data = _results(experiments, "first")
    doc = get(client, f"/experiments/{experiment_id(experiments / 'first' / 'results.json')}")
    rows = doc.cssselect("table.experiment tbody tr")
    by_name = {v["name"]: v for v in data["variants"]}
    ranked = [by_name[n] for n in data["choice"]["order"]]  # the order the choice used
    names = [H.text(r.cssselect("td")[0]).removesuffix(" (winner)") for r in rows]
    assert names == [v["name"] for v in ranked]
    header = [H.text(h) for h in doc.cssselect("table.experiment thead th")]
    for row, v in zip(rows, ranked, strict=True):
        cells = dict(zip(header, (H.text(c) for c in row.cssselect("td")), strict=True))
        assert float(cells["quality"]) == pytest.approx(v["metrics"]["mean_quality"], abs=0.05)
        assert float(cells["judged@K"]) == pytest.approx(v["metrics"]["judged_at_k"], abs=0.005)
        assert cells["verdict"] == v["verdict"]
    (winner,) = doc.cssselect("table.experiment tr.winner")
    assert H.text(winner.cssselect("td")[0]) == f"{data['winner']} (winner)"
    assert len(doc.cssselect("figure.chart svg circle")) == len(data["variants"])
    assert [H.text(p) for p in doc.cssselect("section.summary p")] == data["summary"]


def test_an_unknown_experiment_is_a_404_and_no_folder_says_how_to_give_one(
        client: TestClient, site: tuple[Path, Path, Any]) -> None:
    doc = get(client, "/experiments/000000000000", status=404)
    assert "no experiment '000000000000'" in H.text(doc)
    bare = TestClient(base_url="http://127.0.0.1", app=create_app(site[0]))
    doc = get(bare, "/experiments")
    empty = H.text(doc.cssselect("div.empty")[0])
    assert "recallwatch ops serve --experiments DIR" in empty
    assert "--history" in empty


def test_an_experiment_recorded_in_the_history_is_listed_without_its_folder(
        tmp_path: Path, site: tuple[Path, Path, Any], experiments: Path) -> None:
    """`experiment --history` records the results; the dashboard on that history lists and shows
    them with no folder given, once when the folder is given too, and after the folder is gone."""
    db = tmp_path / "history.db"
    shutil.copy(site[0], db)
    folder = experiments.parent
    code, _, stderr = cli("experiment", str(folder / "second.yaml"), "--out-dir",
                          str(tmp_path / "out" / "second"), "--history", str(db))
    assert code == 0, stderr
    assert f"recorded experiment 1 in {db}" in stderr
    data = _results(tmp_path / "out", "second")
    bare = TestClient(base_url="http://127.0.0.1", app=create_app(db))
    rows = get(bare, "/experiments").cssselect("table.experiments tbody tr")
    assert len(rows) == 1
    cells = [H.text(c) for c in rows[0].cssselect("td")]
    assert cells[1:4] + cells[5:6] == [data["plan"], str(len(data["variants"])), data["base"],
                                       data["chosen_on"]]
    kept = " (the base: no variant beat it)" if data["winner"] == data["base"] else ""
    assert cells[4] == data["winner"] + kept
    assert cells[6:] == [str((tmp_path / "out" / "second").resolve()), "history"]
    assert rows[0].cssselect("a")[0].get("href") == "/experiments/h1"
    both = TestClient(base_url="http://127.0.0.1",
                      app=create_app(db, experiments=[tmp_path / "out"]))
    rows = get(both, "/experiments").cssselect("table.experiments tbody tr")
    assert [H.text(r.cssselect("td")[7]) for r in rows] == ["folder"]
    shutil.rmtree(tmp_path / "out")
    doc = get(bare, "/experiments/h1")
    names = [H.text(r.cssselect("td")[0]).removesuffix(" (winner)")
             for r in doc.cssselect("table.experiment tbody tr")]
    by_name = {v["name"]: v for v in data["variants"]}
    ranked = [by_name[n] for n in data["choice"]["order"]]  # the order the choice used
    assert names == [v["name"] for v in ranked]
    assert [H.text(p) for p in doc.cssselect("section.summary p")] == data["summary"]
    assert "no recorded experiment 2" in H.text(get(bare, "/experiments/h2", status=404))


def test_a_history_that_cannot_be_opened_stops_the_experiment_before_it_runs(
        tmp_path: Path, experiments: Path) -> None:
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("", encoding="utf-8")
    out = tmp_path / "out"
    code, _, stderr = cli("experiment", str(experiments.parent / "second.yaml"), "--out-dir",
                          str(out), "--history", str(not_a_dir / "history.db"))
    assert code == 2, stderr
    assert str(not_a_dir / "history.db") in stderr and "Traceback" not in stderr
    assert not out.exists()  # nothing built, nothing written


# -- in a real browser -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_url(site: tuple[Path, Path, Any], experiments: Path) -> Iterator[str]:
    """The dashboard on 127.0.0.1, a free port, uvicorn in a thread."""
    with served(create_app(site[0], experiments=[experiments])) as url:
        yield url


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(),
                    reason=f"{CHROMIUM} is not installed (run `make browser`)")
def test_in_a_browser_from_the_nav_to_the_frontier_plot(base_url: str,
                                                        experiments: Path) -> None:
    from playwright.sync_api import sync_playwright

    data = _results(experiments, "first")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(10_000)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(base_url + "/")
            page.locator("nav.top a", has_text="Experiments").click()
            page.wait_for_url("**/experiments")
            assert page.locator("table.experiments tbody tr").count() == 2
            page.locator("table.experiments tbody tr", has_text=str(
                (experiments / "first").resolve())).locator("a").click()
            page.wait_for_url("**/experiments/*")
            svg = page.locator("figure.chart svg.plot")
            assert svg.count() == 1 and svg.is_visible()
            box = svg.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 100
            circles = page.locator("figure.chart svg circle")
            assert circles.count() == len(data["variants"])
            tips = page.locator("figure.chart svg circle title").all_text_contents()
            assert sorted(t.split(": ")[1].removesuffix(" (winner)") for t in tips) == sorted(
                v["name"] for v in data["variants"])
            on = sum("on the front" in t
                     for t in page.locator("ul.frontier li").all_inner_texts())
            assert on >= 1
            assert page.locator("figure.chart svg path").count() == (1 if on > 1 else 0)
            assert page.locator("table.experiment tbody tr").count() == len(data["variants"])
            assert page.locator("table.experiment tr.winner").count() == 1
            assert HOSTILE in page.locator("table.experiment").inner_text()
            assert page.evaluate("window.ran") is None
            assert page.locator("table.experiment img").count() == 0
            assert errors == []
        finally:
            browser.close()
