"""``static``: each server draws its S once from its distribution and keeps it (persistent
stragglers); with a scenario table, one scenario is drawn and kept."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from placement.simulation.dynamics.base import Change, Dynamics


class Static(Dynamics):
    name = "static"
    summary = "each server draws its S once and keeps it (persistent stragglers)"
    congestion = "static"

    def start(self) -> np.ndarray:
        return self.draw_law()

    def changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        return iter(())
