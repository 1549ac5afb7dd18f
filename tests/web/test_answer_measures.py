"""The answer measures in the run list, the trends and the monitor's cards: a column, a series and
a card where runs judged answers; a dash, never a 0, for a run that judged none; and the trend
tests over the runs that hold them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from lxml import html
from starlette.testclient import TestClient

from recallwatch.history import History
from recallwatch.history.trend import trend
from recallwatch.web import create_app
from tests.clirun import wide_cli
from tests.history.answers_runs import with_answers
from tests.history.helpers import gate_run, golden_set
from tests.report import helpers as H

STORE = {"uri": "lancedb://kb?table=chunks", "version": "3"}
FAITHFUL = [0.97, 0.95, 0.9, 0.84, 0.8, 0.71]  # falls run after run
HALLUCINATING = [0.03, 0.05, 0.1, 0.2, 0.25, 0.3]  # rises run after run
POLICY_CAP = 0.2  # max_hallucination_rate


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs without answers, then six whose answers get worse (relevance untrusted in the
    third: None). Six: the four answer measures are each tested at 0.05 / 4, which the
    Mann–Kendall test cannot reach over five runs."""
    db = tmp_path_factory.mktemp("answers") / "h.db"
    g = golden_set(4)
    with History(db) as h:
        for _ in range(2):
            h.record(replace(gate_run(g), store=STORE))
        for i, (f, rate) in enumerate(zip(FAITHFUL, HALLUCINATING)):
            run = with_answers(gate_run(g), f, None if i == 2 else 0.8, 0.6, rate)
            h.record(replace(run, store=STORE,
                             policy={**run.policy, "max_hallucination_rate": POLICY_CAP}))
    return db


def page(db: Path, url: str) -> Any:
    r = TestClient(base_url="http://127.0.0.1", app=create_app(db)).get(url)
    assert r.status_code == 200, r.text[-500:]
    return html.fromstring(r.text)


def column(doc: Any, table: str, header: str) -> list[tuple[str, str | None]]:
    """A column's cells (shown text, sort value), top row first."""
    heads = [H.text(th).replace("\xad", "") for th in doc.cssselect(f"{table} thead th")]
    at = heads.index(header)
    return [(H.text(row.cssselect("td")[at]), row.cssselect("td")[at].get("data-v"))
            for row in doc.cssselect(f"{table} tbody tr")]


def test_the_run_list_shows_the_answer_measures_and_a_dash_for_runs_without(
        history: Path) -> None:
    doc = page(history, "/")
    faithful = column(doc, "#runs-table", "faithfulness")  # newest first
    assert faithful == [(f"{f:.3f}", str(f)) for f in reversed(FAITHFUL)] + [("—", "-1")] * 2
    relevance = [shown for shown, _ in column(doc, "#runs-table", "answer relevance")]
    assert relevance == ["0.800", "0.800", "0.800", "—", "0.800", "0.800", "—", "—"]
    rates = [shown for shown, _ in column(doc, "#runs-table", "hallucination rate")]
    assert rates == [f"{r:.3f}" for r in reversed(HALLUCINATING)] + ["—", "—"]


def test_a_history_without_answers_shows_no_answer_columns(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History(db) as h:
        h.record(gate_run(golden_set(2)))
    heads = [H.text(th) for th in page(db, "/").cssselect("#runs-table thead th")]
    assert "faithfulness" not in heads and heads[-1] == "failing"


def test_the_trends_draw_the_answer_measures_and_test_their_trend(history: Path) -> None:
    doc = page(history, "/trends")
    titles = [H.text(f.cssselect("figcaption, .title")[0]) for f in doc.cssselect("figure.chart")]
    assert any(t.startswith("Answers: faithfulness") for t in titles), titles
    rows = {H.text(r.cssselect("td")[0]): r for r in doc.cssselect("table.trend-series tbody tr")}
    assert H.text(rows["faithfulness"].cssselect("td")[1]) == "6"  # the runs that hold it
    assert "down" in H.text(rows["faithfulness"])
    assert "up" in H.text(rows["hallucination_rate"])
    assert "answers_degrading" in H.text(doc)
    plotted = [shown for shown, _ in column(doc, "table.sortable:not(.trend-series)",
                                             "faithfulness")]
    assert plotted == [f"{f:.3f}" for f in reversed(FAITHFUL)] + ["—", "—"]


def test_the_trend_analyses_each_measure_over_the_runs_that_hold_it(history: Path) -> None:
    with History(history, read_only=True) as h:
        t = trend(h)
    assert t.series["faithfulness"].n == 6 and t.series["faithfulness"].direction == "down"
    assert t.series["answer_relevance"].n == 5  # one run's judge was not trusted with it
    assert t.series["hallucination_rate"].direction == "up"
    assert t.series["mean_quality"].n == 8
    (pattern,) = [p for p in t.patterns if p.name == "answers_degrading"]
    assert pattern.metric == "faithfulness"
    assert pattern.message.startswith("answers degrading: faithfulness 0.970 → 0.710 over 6 runs")


def test_history_list_and_trend_print_the_measures(history: Path) -> None:
    code, out, _ = wide_cli("history", "list", "--history", str(history))
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split()[7:9] == ["faithful", "halluc."]
    assert lines[2].split()[7:9] == ["0.710", "0.300"]
    assert lines[-1].split()[7:9] == ["-", "-"]
    code, out, _ = wide_cli("history", "trend", "--history", str(history))
    assert code == 1  # a pattern was found
    assert "faithfulness: 0.970 → 0.710 (-0.260) over 6 runs" in out
    assert "pattern answers_degrading: answers degrading" in out


def test_the_monitor_card_shows_the_hallucination_rate_against_the_policy(
        history: Path) -> None:
    doc = page(history, "/monitor")
    (card,) = doc.cssselect(".card[data-group=answers]")
    text = H.text(card)
    assert "hallucination rate of the gate run" in text and "30.0%" in text
    assert H.text(card.cssselect(".status")[0]) == "breach"
    assert f"max {POLICY_CAP:.1%}" in text
    assert "faithfulness: 71.0%" in text
