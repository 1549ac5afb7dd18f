"""The self-contained HTML report: content checked against the GateResult it renders, the plots
against the numbers, and every user string shown as text, never obeyed."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from recallwatch.acceptance.model import GateResult
from recallwatch.acceptance.score import SCORE_TOLERANCE
from recallwatch.cli import app
from recallwatch.report._text import visible
from recallwatch.report.html import json_script, to_html
from tests.report import helpers as H


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[GateResult]:
    """Three recorded runs: clean (ACCEPT), three queries pushed out (STOP), then one."""
    return H.history(tmp_path_factory.mktemp("h") / "history.db", [0, 3, 1])


@pytest.fixture(scope="module")
def stop(runs: list[GateResult]) -> GateResult:
    assert runs[1].verdict == "STOP"
    return runs[1]


@pytest.fixture(scope="module")
def doc(stop: GateResult) -> Any:
    return H.parse(to_html(stop))


def test_self_contained_nothing_loaded_from_anywhere(stop: GateResult) -> None:
    html = to_html(stop)
    H.assert_inert(html)
    assert "<link" not in html and "@import" not in html and "url(" not in html


def test_csp_allows_only_the_inline_script_by_hash(doc: Any) -> None:
    csp = doc.cssselect('meta[http-equiv="Content-Security-Policy"]')[0].get("content")
    script = next(s for s in doc.cssselect("script") if not s.get("type"))
    digest = base64.b64encode(hashlib.sha256(script.text.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    script_src = csp.split("script-src")[1].split(";")[0]
    assert "default-src 'none'" in csp and "unsafe-inline" not in script_src


def test_verdict_banner_and_aggregates(stop: GateResult, doc: Any) -> None:
    banner = doc.cssselect("#verdict")[0]
    assert "STOP" in banner.get("class") and H.text(banner).startswith("STOP")
    a = stop.aggregate
    assert f"mean quality {a.mean_quality:.1f}" in H.text(banner)
    assert f"{a.failed_queries} of {a.n_queries} queries failing" in H.text(banner)
    cards = {H.text(c.cssselect(".k")[0]): H.text(c.cssselect(".v")[0])
             for c in doc.cssselect(".card")}
    assert cards["MRR"] == f"{a.mrr:.3f}"
    assert cards["mean nDCG@K"] == f"{a.mean_ndcg:.3f}"
    reasons = [H.text(li) for li in doc.cssselect("ul.reasons li")]
    assert [r.split(":")[0] for r in reasons] == [r.rule for r in stop.reasons]


def test_query_table_one_row_per_query_with_its_numbers(stop: GateResult, doc: Any) -> None:
    rows = doc.cssselect("#query-table tbody tr")
    assert len(rows) == len(stop.queries)
    for row, q in zip(rows, stop.queries):
        cells = row.cssselect("td")
        assert H.text(cells[0].cssselect("code")[0]) == " ".join(visible(q.id).split())
        assert float(cells[3].get("data-v")) == q.recall
        assert float(cells[4].get("data-v")) == q.quality
        assert row.get("data-status") == ("pass" if q.passed else "fail")
        assert row.get("data-domain") == (q.domain or "")
        href = cells[0].cssselect("a")[0].get("href")
        assert doc.cssselect(f"details{href}")


def test_drill_down_expected_ranks_topk_threshold_and_noise(stop: GateResult,
                                                            doc: Any) -> None:
    for i, q in enumerate(stop.queries):
        d = doc.cssselect(f"details#q-{i}")[0]
        exp_rows = d.cssselect("table.expected tbody tr")
        assert len(exp_rows) == len(q.expected)
        for row, h in zip(exp_rows, q.expected):
            rank = H.text(row.cssselect("td")[1])
            assert rank == (str(h.rank) if h.rank else "beyond the search depth")
        top_rows = d.cssselect("table.topk tbody tr:not(.threshold)")
        assert [H.text(r.cssselect("td")[0]) for r in top_rows] == \
            [str(n) for n in range(1, len(q.top) + 1)]
        # the rows shown as noise are exactly the ones the gate counted
        assert len(d.cssselect("table.topk tr.noise")) == q.noise
        marker = d.cssselect("table.topk tr.threshold")
        assert len(marker) == (1 if q.noise_threshold is not None else 0)
        if q.noise:
            after = marker[0].getnext()
            first_below = next(r for r, (_, s) in enumerate(q.top, start=1)
                               if s < q.noise_threshold - SCORE_TOLERANCE)
            assert H.text(after.cssselect("td")[0]) == str(first_below)
        expected_ids = {h.id for h in q.expected}
        assert len(d.cssselect("table.topk tr.exp")) == sum(i in expected_ids for i, _ in q.top)
        diags = d.cssselect(".diag b")
        assert [H.text(b) for b in diags] == [x.title for x in q.diagnosis]


def test_comparison_with_previous_and_last_accepted(runs: list[GateResult]) -> None:
    latest = runs[2]
    doc = H.parse(to_html(latest))
    blocks = doc.cssselect(".compare")
    assert len(blocks) == 2
    prev, acc = latest.comparison["previous"], latest.comparison["last_accepted"]
    assert prev["run_id"] == runs[1].run_id and acc["run_id"] == runs[0].run_id
    assert H.text(blocks[0].cssselect("h3 code")[0]) == runs[1].run_id
    assert H.text(blocks[1].cssselect("h3 code")[0]) == runs[0].run_id
    assert " ".join(visible(prev["summary"]).split()) in H.text(blocks[0])
    # queries newly passing since the previous run link to their drill-downs
    links = blocks[0].cssselect("li a")
    assert len(links) >= len(prev["newly_passing"]) > 0
    for a in links:
        assert doc.cssselect(f"details{a.get('href')}")
    # the first run has no baseline: said so, not left blank
    first = H.parse(to_html(runs[0]))
    assert "None: this is the first run" in H.text(first.cssselect(".compare")[0])


def _bar_values(figure: Any) -> list[float]:
    tips = [t.text for t in figure.cssselect("rect title")]
    return [float(re.match(r".*?: ([0-9.]+)", t).group(1)) for t in tips]


def test_plots_add_up_to_the_run(stop: GateResult, doc: Any) -> None:
    figures = doc.cssselect("figure.chart")
    assert [H.text(f.cssselect("figcaption")[0]) for f in figures] == [
        "Quality score per query", "Mean recall by domain", "Ranks of the expected chunks"]
    assert all(f.cssselect("svg") for f in figures)
    assert sum(_bar_values(figures[0])) == len(stop.queries)
    assert sum(_bar_values(figures[2])) == sum(len(q.expected) for q in stop.queries)
    per = stop.aggregate.per_domain
    assert sorted(_bar_values(figures[1])) == pytest.approx(
        sorted(float(f"{per[d]['mean_recall']:.3g}") for d in per))


def test_every_hostile_string_is_shown_as_text(stop: GateResult) -> None:
    html = to_html(stop)
    H.assert_inert(html)
    doc = H.parse(html)
    page = " ".join(doc.text_content().split())
    for q in stop.queries:
        assert " ".join(q.id.split()) in page
        assert " ".join(q.text.split()) in page
    assert stop.dataset["name"] in page
    for payload in H.XSS:
        assert payload.split()[0] in page


def test_json_island_round_trips_the_run(stop: GateResult, doc: Any) -> None:
    island = doc.cssselect("script#rw-result")[0]
    assert island.get("type") == "application/json"
    assert "</" not in island.text and "<!--" not in island.text
    assert GateResult.from_dict(json.loads(island.text)) == stop


@given(st.recursive(st.text() | st.integers() | st.booleans() | st.none(),
                    lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=8), kids, max_size=4), max_leaves=12))
def test_json_script_is_inert_and_exact(value: object) -> None:
    out = str(json_script(value, 'x"><script>'))
    assert out.count("</script") == 1 and out.endswith("</script>")
    assert "<!--" not in out and "<script>" not in out[len('<script '):]
    body = out[out.index(">") + 1:-len("</script>")]
    assert json.loads(body) == value


def test_gate_report_dir_writes_the_html(tmp_path: Path) -> None:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"name": "<script>kb</script>", "version": "1", "queries": [
        {"id": "<img src=x onerror=alert(1)>", "text": "q", "expected": ["a", "b"]}]}))
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"query_id": "<img src=x onerror=alert(1)>", "results": [
        {"id": "a", "score": 0.9}, {"id": "b", "score": 0.8}]}) + "\n")
    r = CliRunner().invoke(app, ["gate", str(golden), "--results", str(results), "--no-history",
                                 "--report", str(tmp_path / "out"), "--format", "json"])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    H.assert_inert(html)
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert H.text(H.parse(html).cssselect("#verdict")[0]).startswith("ACCEPT")


def _fresh_environment(monkeypatch: pytest.MonkeyPatch, cache: Path | None) -> None:
    """The next render builds its Jinja environment anew, with recallwatch's user cache in
    ``cache`` (None: caches off)."""
    from recallwatch.report import html

    if cache is None:
        monkeypatch.setenv("RECALLWATCH_CACHE", "0")
    else:
        monkeypatch.delenv("RECALLWATCH_CACHE", raising=False)
        monkeypatch.setenv("RECALLWATCH_CACHE_DIR", str(cache))
    html.environment.cache_clear()


def test_compiled_templates_are_kept_and_the_report_is_the_same(
        stop: GateResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recallwatch.report import html

    try:
        _fresh_environment(monkeypatch, None)
        without = to_html(stop)  # compiled in memory, nothing kept
        _fresh_environment(monkeypatch, tmp_path)
        first = to_html(stop)  # compiled, then kept
        kept = sorted(p.name for p in (tmp_path / "templates").iterdir())
        assert kept and all(name.endswith(".cache") for name in kept)
        _fresh_environment(monkeypatch, tmp_path)
        again = to_html(stop)  # read back, not compiled
        assert (without, first) == (again, again)
        # an entry that cannot be read (damaged, or another version's) is compiled afresh
        from jinja2.bccache import bc_magic

        for entry in (tmp_path / "templates").iterdir():
            entry.write_bytes(bc_magic + b"\x80 not a template")
        _fresh_environment(monkeypatch, tmp_path)
        assert to_html(stop) == again
        # a cache that cannot be written costs a compilation, never the report
        (tmp_path / "ro").write_text("a file where the cache directory would be")
        _fresh_environment(monkeypatch, tmp_path / "ro")
        assert to_html(stop) == again
    finally:
        html.environment.cache_clear()


def test_json_script_escapes_as_before(stop: GateResult) -> None:
    value = {"q": "</script><!-- & \u2028\u2029 >", "nested": [stop.to_dict()["verdict"]]}
    text = str(json_script(value, "x"))
    body = json.dumps(value, ensure_ascii=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        body = body.replace(raw, escaped)
    assert text == f'<script type="application/json" id="x">{body}</script>'
