"""``recallwatch ops serve``: errors as one line with exit 2, the non-loopback warning, and the real
command serving pages until interrupted."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import uvicorn
from typer.testing import CliRunner

from recallwatch.acceptance.model import GateResult
from recallwatch.cli import app
from recallwatch.cli.ops.serve import is_loopback
from tests.web.conftest import serving, stop, wait_up

Site = tuple[Path, Path, list[GateResult]]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("localhost", True), ("::1", True),
    ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
    ("example.org", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_missing_history_is_a_one_line_error(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["ops", "serve", "--history", str(tmp_path / "none.db")])
    assert r.exit_code == 2
    assert r.output.startswith(f"Error: no run history at {tmp_path / 'none.db'}")
    assert "Traceback" not in r.output


def test_port_in_use_is_a_one_line_error(site: Site) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = CliRunner().invoke(app, ["ops", "serve", "--history", str(site[0]), "--port",
                                     str(port)])
    assert r.exit_code == 2
    assert f"Error: cannot listen on 127.0.0.1:{port}: " in r.output
    assert "choose another --port" in r.output


@pytest.mark.parametrize(("host", "warned"), [("127.0.0.1", False), ("0.0.0.0", True)])
def test_warns_when_not_bound_to_loopback(site: Site, monkeypatch: pytest.MonkeyPatch,
                                          host: str, warned: bool) -> None:
    served: list[int] = []

    def run(self: uvicorn.Server, sockets: list[socket.socket]) -> None:  # no event loop here
        served.append(sockets[0].getsockname()[1])
        sockets[0].close()

    monkeypatch.setattr(uvicorn.Server, "run", run)
    r = CliRunner().invoke(app, ["ops", "serve", "--history", str(site[0]), "--host", host,
                                 "--port", "0"])
    assert r.exit_code == 0, r.output
    assert served and served[0] > 0
    assert f"recallwatch dashboard on http://{host}:{served[0]}/" in r.output
    assert ("Warning: the dashboard is bound to 0.0.0.0, not to loopback" in r.output) is warned


def test_serve_for_real_until_interrupted(site: Site) -> None:
    db, bench, runs = site
    with serving(["ops", "serve", "--history", str(db), "--port", "0", "--bench", str(bench)],
                 r"http://127\.0\.0\.1:(\d+)/") as (proc, match):
        r = wait_up(f"http://127.0.0.1:{match.group(1)}/runs/latest")
        assert r.status_code == 200 and runs[-1].run_id in r.text
        code, rest = stop(proc)
        assert code == 0
        assert "recallwatch dashboard stopped" in rest


def test_every_serve_option_is_documented() -> None:
    import typer.main

    docs = (ROOT / "docs" / "dashboard.md").read_text("utf-8")
    ops = typer.main.get_command(app).commands["ops"]  # type: ignore[attr-defined]
    command = ops.commands["serve"]
    options = [opt for p in command.params for opt in p.opts if opt.startswith("--")]
    assert options, "serve has no options?"
    for opt in options:
        assert f"`{opt}" in docs, f"serve {opt} is not in docs/dashboard.md"
