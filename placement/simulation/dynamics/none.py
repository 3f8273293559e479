"""``none``: every S = 1, the straggler-free reference."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from placement.simulation.dynamics.base import Change, Dynamics


class NoSlowdown(Dynamics):
    name = "none"
    summary = "every S = 1 (the straggler-free reference)"
    congestion = "none"

    def start(self) -> np.ndarray:
        return np.ones(self.n)

    def changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        return iter(())
