"""A fake machine for tests of timing rules: a clock that only the fakes advance, never the wall
clock, so no assertion depends on the machine the tests run on.

One call takes a median of ``median_s`` seconds times a log-normal factor (``sigma``); on a
loaded machine every call is scaled by ``load``; with ``spike_share``, that share of the calls
meets a busy moment and takes ``spike`` times as long. A call of an index ``speed`` times slower
is scaled by ``speed``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Machine"]


@dataclass
class Machine:
    """The fake clock (call it for the time) and the load of the moment: every timed call draws
    its duration with :meth:`spend`."""

    seed: int
    load: float = 1.0
    median_s: float = 0.002
    sigma: float = 0.35
    spike_share: float = 0.0
    spike: float = 1.0
    now: float = 0.0
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def __call__(self) -> float:
        return self.now

    def spend(self, speed: float) -> None:
        """One call of an index ``speed`` times slower than the reference, under the load."""
        spiked = self.spike_share > 0 and self.rng.random() < self.spike_share
        self.now += self.median_s * speed * self.load * (self.spike if spiked else 1.0) * float(
            np.exp(self.sigma * self.rng.normal()))
