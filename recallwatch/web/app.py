"""The local dashboard: a read-only Starlette app over the run history and bench results.

    from recallwatch.web import create_app
    app = create_app(".recallwatch/history.db", bench="bench-out/")  # any ASGI server

Every request opens the history read-only (SQLite ``mode=ro``; on PostgreSQL a read-only
session): the dashboard can never write, sees runs recorded while it serves, and needs no lock or
shared connection between threads.
Pages are rendered by the report's Jinja environment (autoescape on), so a run's page is the
same markup as the self-contained HTML report.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from recallwatch.errors import HistoryError, UsageError
from recallwatch.experiment.output import TEMPLATES as EXPERIMENT_TEMPLATES
from recallwatch.history import History
from recallwatch.report.html import content_security_policy, environment, run_view
from recallwatch.web._experiments import experiment_view, experiments_view
from recallwatch.web._funnel import funnel_view
from recallwatch.web._guard import Guard, check_token, served_names
from recallwatch.web._runs import MAX_PAGE_SIZE, page_numbers, runs_view
from recallwatch.web._views import bench_view, monitor_view, trends_view

__all__ = ["create_app"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULT_LAST = 30


def _run_url(run_id: str) -> str:
    return f"/runs/{quote(run_id, safe='')}"


def _headers() -> dict[str, str]:
    env = environment(TEMPLATES)
    return {
        "Content-Security-Policy": content_security_policy(str(env.globals["inline_js"])),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def create_app(history: str | Path, *, bench: str | Path | None = None,
               host: str = "127.0.0.1", token: str | None = None,
               experiments: Sequence[str | Path] = ()) -> Guard:
    """The dashboard over ``history`` (a SQLite file or a ``postgresql://`` URI; must exist) and,
    optionally, the bench result files under ``bench`` and the experiments' output directories
    ``experiments`` (each one, or a folder holding several).

    It answers only requests addressed to a loopback name or to ``host`` (the address it is
    served on), and with ``token`` only those that carry it (:mod:`recallwatch.web._guard`).
    Served on a wildcard address (``0.0.0.0``, ``::``) it needs a token."""
    names = served_names(host)
    if token is not None:
        check_token(token, "--token")
    elif names is None:
        raise UsageError(f"the dashboard served on every address ({host}) needs an access "
                         "token: pass --token, or let `recallwatch serve` make one")
    bench_dir = None if bench is None else Path(bench)
    with History(history, read_only=True) as first:  # refuse a missing or foreign one up front
        shown = first.location  # a URI's password redacted
    env = environment(TEMPLATES, EXPERIMENT_TEMPLATES)
    headers = _headers()
    experiment_dirs = [Path(d) for d in experiments]

    def page(template: str, section: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(section=section, history=shown,
                                                 bench_dir=bench, **context)
        return HTMLResponse(html, status_code=status, headers=headers)

    @contextmanager
    def opened() -> Iterator[History]:
        h = History(history, read_only=True)
        try:
            yield h
        finally:
            h.close()

    def runs(request: Request) -> Response:
        dataset = request.query_params.get("dataset") or None
        number, size = page_numbers(request.query_params.get("page"),
                                    request.query_params.get("size"))
        with opened() as h:
            view = runs_view(h, dataset, number, size)
        return page("runs.html", "runs", view=view, rows=view["rows"], dataset=dataset,
                    datasets=view["datasets"], max_page_size=MAX_PAGE_SIZE,
                    title="recallwatch — runs")

    def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        with opened() as h:
            result = h.load(h.resolve(run_id))
        return page("run.html", "runs", run=run_view(result, link_base=_run_url(result.run_id)),
                    data=result.to_dict(),
                    title=f"recallwatch {result.verdict} — {result.run_id}")

    def query(request: Request) -> Response:
        run_id, query_id = request.path_params["run_id"], request.path_params["query_id"]
        with opened() as h:
            result = h.load(h.resolve(run_id))
        view = run_view(result, link_base=_run_url(result.run_id))
        match = [v for v in view["queries"] if v["q"].id == query_id]
        if not match:
            raise UsageError(f"run {result.run_id} has no query {query_id!r}")
        return page("query.html", "runs", run=view, v=match[0],
                    title=f"recallwatch — {query_id} in {result.run_id}")

    def trends(request: Request) -> Response:
        dataset = request.query_params.get("dataset") or None
        try:
            last = max(2, min(500, int(request.query_params.get("last", DEFAULT_LAST))))
        except ValueError:
            last = DEFAULT_LAST
        with opened() as h:
            view = trends_view(h, dataset, last)
        return page("trends.html", "trends", view=view, last=last, title="recallwatch — trends")

    def monitor(request: Request) -> Response:
        with opened() as h:
            view = monitor_view(h)
        return page("monitor.html", "monitor", view=view, title="recallwatch — monitor")

    def funnel(request: Request) -> Response:
        with opened() as h:
            view = funnel_view(h)
        return page("funnel.html", "funnel", view=view, title="recallwatch — offline to online")

    def benchmarks(request: Request) -> Response:
        return page("bench.html", "bench", view=bench_view(bench_dir),
                    title="recallwatch — benchmarks")

    def experiment_list(request: Request) -> Response:
        with opened() as h:
            view = experiments_view(experiment_dirs, h)
        return page("experiments.html", "experiments", view=view,
                    title="recallwatch — experiments")

    def experiment(request: Request) -> Response:
        with opened() as h:
            view = experiment_view(experiment_dirs, request.path_params["exp_id"], h)
        return page("experiment_page.html", "experiments", view=view,
                    title=f"recallwatch experiment — {view['plan']}")

    async def not_found(request: Request, exc: Exception) -> Response:
        return page("error.html", "", status=404, message=str(exc), title="recallwatch — not found")

    async def unreadable(request: Request, exc: Exception) -> Response:
        return page("error.html", "", status=500, message=str(exc),
                    title="recallwatch — history unreadable")

    async def http_error(request: Request, exc: Exception) -> Response:
        status = int(getattr(exc, "status_code", 500))
        return page("error.html", "", status=status, message=str(getattr(exc, "detail", exc)),
                    title=f"recallwatch — {status}")

    routes = [
        Route("/", runs),
        Route("/runs/{run_id}", run),
        Route("/runs/{run_id}/queries/{query_id:path}", query),
        Route("/trends", trends),
        Route("/monitor", monitor),
        Route("/funnel", funnel),
        Route("/bench", benchmarks),
        Route("/experiments", experiment_list),
        Route("/experiments/{exp_id}", experiment),
    ]
    site = Starlette(routes=routes, exception_handlers={
        UsageError: not_found, HistoryError: unreadable, 404: http_error, 405: http_error,
    })
    return Guard(site, names=names, what="the dashboard", token=token)
