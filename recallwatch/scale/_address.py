"""Whether ``--address`` names a Ray head node, found out in seconds: Ray itself retries for
minutes, printing its own logs."""

from __future__ import annotations

import math
import os
import socket
import time

from recallwatch.errors import UsageError

__all__ = ["ANSWER_TIMEOUT_S", "CONNECT_TIMEOUT_S", "TIMEOUT_VARIABLE", "check_reachable"]

# How long --address may take to accept a connection, then to answer as a Ray head node, before
# the command gives up (RECALLWATCH_RAY_TIMEOUT, in seconds, sets both).
CONNECT_TIMEOUT_S = 5.0
ANSWER_TIMEOUT_S = 10.0
TIMEOUT_VARIABLE = "RECALLWATCH_RAY_TIMEOUT"
# A Ray head node's control service speaks gRPC over HTTP/2: to a client's connection preface
# it answers at once with a SETTINGS frame (the 9-byte frame header, type 4, on stream 0).
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS = 4


def _timeouts() -> tuple[float, float]:
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    try:
        value = float(text)
    except ValueError:
        return CONNECT_TIMEOUT_S, ANSWER_TIMEOUT_S
    if not math.isfinite(value) or value <= 0:
        return CONNECT_TIMEOUT_S, ANSWER_TIMEOUT_S
    return value, value


def check_reachable(address: str) -> None:
    """Refuse, in seconds, an --address nobody listens on, or where something listens that does
    not answer as a Ray head node: Ray itself retries for minutes, printing its own logs."""
    if address in ("auto", "local"):
        return
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise UsageError(f"--address must be HOST:PORT of the Ray head node (or auto), found "
                         f"{address!r}")
    connect_s, answer_s = _timeouts()
    hint = ("check --address: HOST:PORT of the head node (`ray start --head` prints it), or "
            f"auto; {TIMEOUT_VARIABLE}=SECONDS waits longer")
    try:
        conn = socket.create_connection((host.strip("[]"), int(port)), timeout=connect_s)
    except OSError as exc:
        raise UsageError(f"cannot reach the Ray cluster at {address}: nothing accepted a "
                         f"connection within {connect_s:g} s ({exc.strerror or exc}); "
                         f"{hint}") from None
    with conn:
        header = b""
        try:
            conn.settimeout(answer_s)
            conn.sendall(_HTTP2_PREFACE)
            deadline = time.monotonic() + answer_s
            while len(header) < 9 and time.monotonic() < deadline:
                conn.settimeout(max(0.01, deadline - time.monotonic()))
                piece = conn.recv(9 - len(header))
                if not piece:
                    break
                header += piece
        except OSError:
            pass
    if len(header) < 9 or header[3] != _SETTINGS:
        what = ("said nothing" if not header else "answered something else")
        raise UsageError(f"cannot reach the Ray cluster at {address}: something accepted the "
                         f"connection but {what} within {answer_s:g} s, where a Ray head node "
                         f"answers at once; {hint}")
