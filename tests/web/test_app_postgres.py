"""The dashboard over a history on PostgreSQL, in process: the hostile site copied from SQLite to
PostgreSQL renders every page exactly as it does from the file, shows the URI without its
password, and never writes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from recallwatch.acceptance.model import GateResult
from recallwatch.errors import HistoryError
from recallwatch.history import History, copy_history
from recallwatch.web import create_app
from tests.history.helpers import raw_backend
from tests.pg import PG_PASSWORD
from tests.report import helpers as H

Site = tuple[Path, Path, list[GateResult]]


def _pages(runs: list[GateResult]) -> list[str]:
    last = runs[-1]
    return ["/", "/?dataset=" + quote(last.dataset["name"]), "/trends", "/trends?last=3",
            "/monitor", "/bench", "/runs/latest", "/runs/accepted", "/runs/nope",
            *(f"/runs/{quote(r.run_id)}" for r in runs),
            *(f"/runs/{quote(last.run_id)}/queries/{quote(q.id, safe='')}"
              for q in last.queries)]


def _every_row(location: str) -> list[object]:
    with raw_backend(location) as db:
        return [db.execute(f"SELECT * FROM {t}") for t in ("runs", "query_results",
                                                             "monitor_runs")]


def test_every_page_is_the_same_as_from_the_sqlite_file(
        site: Site, pg_databases: Callable[[], str]) -> None:
    db, bench, runs = site
    uri = pg_databases()
    copy_history(str(db), uri)
    typed = uri.replace("postgres@", f"postgres:{PG_PASSWORD}@")
    shown = uri.replace("postgres@", "postgres:***@")
    before = _every_row(uri)
    from_file = TestClient(base_url="http://127.0.0.1", app=create_app(db, bench=bench))
    from_pg = TestClient(base_url="http://127.0.0.1", app=create_app(typed, bench=bench))
    for url in _pages(runs):
        a, b = from_file.get(url), from_pg.get(url)
        assert b.status_code == a.status_code, url
        assert PG_PASSWORD not in b.text, url
        H.assert_inert(b.text)
        assert b.text.replace(shown, str(db)) == a.text, url
    assert shown in from_pg.get("/").text
    assert _every_row(uri) == before  # browsing wrote nothing


def test_runs_recorded_while_serving_appear(pg_databases: Callable[[], str]) -> None:
    uri = pg_databases()
    H.history(uri, [0, 1])  # type: ignore[arg-type]
    client = TestClient(base_url="http://127.0.0.1", app=create_app(uri))
    assert len(H.parse(client.get("/").text).cssselect("#runs-table tbody tr")) == 2
    H.history(uri, [2])  # type: ignore[arg-type]
    assert len(H.parse(client.get("/").text).cssselect("#runs-table tbody tr")) == 3


def test_an_empty_database_or_a_wrong_password_is_refused_up_front(
        pg_databases: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> None:
    uri = pg_databases()
    with pytest.raises(HistoryError, match=f"^no run history at {uri} "):
        create_app(uri)
    History(uri).close()
    monkeypatch.setenv("PGPASSWORD", "wrong")
    with pytest.raises(HistoryError, match=r"cannot connect to PostgreSQL: .*password"):
        create_app(uri)
