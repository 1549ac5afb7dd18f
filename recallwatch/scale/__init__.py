"""Running the heavy steps on more than one machine: corpus embedding, exact ground truth and the
gate's retrieval on a Ray cluster (:mod:`recallwatch.scale.ray_engine`).

Importing this package imports nothing heavy; Ray itself is imported only when a Ray path runs,
and a missing Ray says how to install it (``pip install 'recallwatch[ray]'``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from recallwatch.errors import UsageError

__all__ = ["ENGINES", "Engine", "engine_session"]

Engine = Literal["local", "ray"]
ENGINES: tuple[Engine, ...] = ("local", "ray")


@contextmanager
def engine_session(engine: Engine, address: str | None = None,
                   workers: int | None = None) -> Iterator[bool]:
    """True inside a connected Ray session when ``engine`` is ``"ray"``; False (and nothing
    started) for the single-process path, which refuses Ray-only settings."""
    if engine == "local":
        if address is not None or workers is not None:
            raise UsageError("--address and --workers only apply with --engine ray")
        yield False
        return
    from recallwatch.scale.ray_engine import ray_session

    with ray_session(address, workers):
        yield True
