"""``recallwatch ops serve``: the local, read-only dashboard over the run history.

Exit codes: 0 when stopped (Ctrl+C); 2 usage or input error (missing history, port in use,
the web extra not installed).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._options import DEFAULT_HISTORY, HistoryPath, Port


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """Bind first, so a port in use is a one-line error rather than a server log."""
    from recallwatch.errors import UsageError

    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r}: cannot resolve it ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror} (choose another "
                         "--port, or 0 for any free one)") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    history: HistoryPath = DEFAULT_HISTORY,
    host: Annotated[str, typer.Option(
        "--host", help="Address to bind; anything but loopback is warned about.")] = "127.0.0.1",
    port: Port = 8000,
    bench: Annotated[Path | None, typer.Option(
        "--bench", help="Directory of bench result files (results.json) for the frontiers "
        "page.")] = None,
    experiments: Annotated[list[Path] | None, typer.Option(
        "--experiments", help="Output directory of `recallwatch experiment` (or a folder "
        "holding several) for the experiments page: each one's ranked table of variants and "
        "its quality-against-cost plot. Repeat for more.")] = None,
    token: Annotated[str | None, typer.Option(
        "--token", envvar="RECALLWATCH_SERVE_TOKEN", show_envvar=True,
        help="Access token the dashboard asks for (16 or more letters, digits or - . _ ~): "
        "the address printed carries it once and the browser keeps it in a cookie. Made for "
        "you when --host is not loopback. Prefer the environment variable: a command line is "
        "visible to other users of the machine.")] = None,
) -> None:
    """Serve the read-only dashboard: runs, run and query drill-downs, trends, the operations
    monitor, benchmark frontiers and experiments. The history is opened read-only.

    It answers only addresses naming this machine's loopback (localhost, 127.0.0.1, [::1]) or
    --host exactly, so a web page cannot read it by pointing its own host name here."""
    import secrets

    from recallwatch.errors import NotInstalledError

    try:
        import uvicorn

        from recallwatch.web.app import create_app
    except ModuleNotFoundError as exc:
        raise NotInstalledError(f"{exc.name} (needed by the dashboard)", "web") from None
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    # refuses a missing history or a bad token before binding
    web_app = create_app(history, bench=bench, host=host, token=token,
                         experiments=experiments or ())
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    if not is_loopback(host):
        typer.echo(f"Warning: the dashboard is bound to {host}, not to loopback: anyone who "
                   "can reach this address and has the access token sees every query, chunk "
                   "id and store URI of the history, and the page travels unencrypted. Use "
                   "--host 127.0.0.1 unless you mean it.", err=True)
    from recallwatch._redact import redact

    address = f"http://{shown}:{bound}/" + ("" if token is None else f"?token={token}")
    typer.echo(f"recallwatch dashboard on {address} (history {redact(history)}, "
               "read-only); Ctrl+C to stop", err=True)
    server = uvicorn.Server(uvicorn.Config(web_app, log_level="warning", access_log=False))
    # uvicorn shuts down cleanly, then re-raises the Ctrl+C it captured: for a server that
    # is the normal way to stop, not an interrupted run
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    typer.echo("recallwatch dashboard stopped", err=True)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
