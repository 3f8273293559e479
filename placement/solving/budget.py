"""The stop object: a solve's wall-clock end, and shares of the time left.

Every method receives one in :attr:`placement.solving.Options.budget`; a method that hands
work to another gives it a share (``budget.share(0.7)``) or an earlier end
(``budget.before(margin)``), never a fresh limit that could outlast its own.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

__all__ = ["Budget", "NO_BUDGET", "checks_margin"]


@dataclass(frozen=True)
class Budget:
    """Ends at ``end``, a ``time.monotonic()`` reading (shared by the processes of one
    machine, so a budget can be handed to a worker process).

    >>> b = Budget.seconds(10.0)
    >>> 9.0 < b.left() <= 10.0 and not b.expired()
    True
    """

    end: float

    @classmethod
    def seconds(cls, s: float) -> Budget:
        """A budget of ``s`` seconds from now."""
        return cls(time.monotonic() + s)

    def left(self) -> float:
        """Seconds left (0 when over)."""
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def share(self, fraction: float) -> Budget:
        """A budget ending after ``fraction`` of the time left."""
        return Budget(time.monotonic() + fraction * self.left())

    def before(self, margin: float) -> Budget:
        """This budget ending ``margin`` seconds earlier."""
        return Budget(self.end - margin)


NO_BUDGET = Budget(math.inf)
"""The placeholder of an :class:`~placement.solving.Options` built without a budget: it
gets one of ``time_limit_s`` from its construction."""


def checks_margin(time_limit_s: float) -> float:
    """Seconds a method leaves at the end of its budget for the driver's final validation
    and evaluation (grows with the limit, as the instances that get long limits are large)."""
    return 0.2 + min(1.0, 0.02 * time_limit_s)
